// gostacks — a Go test target for cprof: the main goroutine burns CPU in
// main.burn (called from main.main), a second goroutine allocates without
// pause (GC work, much of it on the g0 stack through systemstack), and
// a third sleeps on a locked OS thread in a raw nanosleep; the runtime's
// own threads (sysmon, idle Ms parked in futex, the netpoller) sleep.
package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

var sink []byte
var total uint64

//go:noinline
func burn(n int) uint64 {
	s := uint64(0)
	for i := 0; i < n; i++ {
		s += uint64(i*i) % 7
	}
	return s
}

//go:noinline
func allocate() {
	for {
		for i := 0; i < 1000; i++ {
			sink = make([]byte, 4096)
		}
		time.Sleep(time.Millisecond)
	}
}

//go:noinline
func lockedSleeper(locked chan<- struct{}) {
	runtime.LockOSThread()
	close(locked)
	for {
		ts := syscall.Timespec{Sec: 1}
		syscall.Syscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
	}
}

func main() {
	go allocate()
	locked := make(chan struct{})
	go lockedSleeper(locked)
	<-locked
	go func() { time.Sleep(time.Hour) }()
	os.Stdout.WriteString("ready\n")
	for {
		total += burn(1 << 20)
	}
}

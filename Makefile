# cprof — one plain Makefile. Sources are found by wildcard: a new .c file in
# a module directory is built without touching this file.
#
#   make              build build/cprof-attach and build/libcprof.so
#   make demo         install missing packages, build, profile a bundled workload
#   make check        install missing packages, build, run every test
#   make check SANITIZE=address,undefined
#                     the same with cprof-attach and the unit tests built with
#                     sanitizers, in build-san/ (the shim and the test targets
#                     stay plain: they run inside other programs)
#   make stress       the long fault tests, 200 inject cycles (CPROF_STRESS=10)
#   make fuzz         libFuzzer harnesses (clang) for the untrusted-input
#                     parsers, each for FUZZ_SECONDS (default 60)
#   make install      install into $(DESTDIR)$(PREFIX) (default /usr/local)

CC      ?= cc
CFLAGS  ?= -O2 -g
PREFIX  ?= /usr/local
SANITIZE ?=
ifeq ($(SANITIZE),)
B       := build
SAN_FLAGS :=
else
B       := build-san
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

# libcurl (--push) and libdebuginfod (DEBUGINFOD_URLS) are loaded with
# dlopen when first needed (common/dynlib.h), not linked: their headers
# only. --as-needed drops what nothing references. __cxa_demangle comes
# from the static libsupc++ (g++'s), not libstdc++.so: its 1700 relocations
# (and libgcc_s) were most of what ld.so still did at start-up.
CURL_CFLAGS := $(shell pkg-config --cflags libcurl 2>/dev/null)
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
CPPFLAGS += -I. -I$(B) -D_GNU_SOURCE $(CURL_CFLAGS)
BASE_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS) $(CPPFLAGS) -MMD -MP -pthread
ALL_CFLAGS = $(BASE_CFLAGS) $(SAN_FLAGS)
LIBS     := -Wl,--as-needed -lunwind-x86_64 -lunwind -ldw -lelf -llzma -lz -lprotobuf-c \
	    -Wl,-Bstatic -lsupc++ -Wl,-Bdynamic -lm -ldl -pthread

# Everything but the program's main() goes into one static library that the
# program and the unit tests link against.
CORE_SRC := $(filter-out attach/cli/main.c,$(wildcard common/*.c model/*.c writer/*.c unwind/*.c attach/*/*.c))
PROTO_C  := $(B)/proto/profile.pb-c.c
PROTO_H  := $(B)/proto/profile.pb-c.h
CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o) $(B)/obj/proto/profile.pb-c.o
PROG     := $(B)/cprof-attach

# libcprof.so, the LD_PRELOAD shim: its own position-independent objects,
# never linked with the core library.
SHIM_SRC := $(wildcard shim/*.c)
SHIM_OBJ := $(SHIM_SRC:%.c=$(B)/obj-pic/%.o)
SHIM     := $(B)/libcprof.so
# The unwinder linked in and kept private (no libgcc_s.so to load at every
# process start), and no libm: together they were most of the shim's
# start-up cost.
SHIM_LIBGCC := -static-libgcc -Wl,--exclude-libs,ALL
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)

# test_shim_X.c tests shim/X.c alone; every other test_*.c links the core.
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/unit/%)
TARGET_SRC := $(wildcard tests/targets/*.c)
TARGET_BIN := $(TARGET_SRC:tests/targets/%.c=$(B)/tests/targets/%)
# C++ targets (tests/targets/*.cc), built like the C ones.
TARGET_CXX_SRC := $(wildcard tests/targets/*.cc)
TARGET_BIN += $(TARGET_CXX_SRC:tests/targets/%.cc=$(B)/tests/targets/%)
# Frame-pointer builds of targets (-fno-omit-frame-pointer, the default of
# Fedora and Ubuntu packages): every function's CFA is rbp-based.
FP_TARGETS := parking
TARGET_BIN += $(FP_TARGETS:%=$(B)/tests/targets/%-fp)
# Static builds (no .eh_frame_hdr: unwound through cprof's own table over
# .eh_frame), non-PIE and static-PIE.
STATIC_TARGETS := stacks pltspin
TARGET_BIN += $(STATIC_TARGETS:%=$(B)/tests/targets/%-static) $(STATIC_TARGETS:%=$(B)/tests/targets/%-static-pie)
# Non-PIE builds (-fno-pie -no-pie): a program that takes malloc's address
# has a canonical PLT entry for it.
NOPIE_TARGETS := shortjob
TARGET_BIN += $(NOPIE_TARGETS:%=$(B)/tests/targets/%-nopie)
# ... and a build whose own functions have CFI only in .debug_frame
# (-fno-asynchronous-unwind-tables -g), as some embedded and kernel-style
# builds do: their .eh_frame_hdr covers only the C runtime's start files.
TARGET_BIN += $(STATIC_TARGETS:%=$(B)/tests/targets/%-debugframe)
# Go targets (tests/targets/NAME/*.go; CFI in .debug_frame only), built
# only where a Go toolchain is installed; their tests say SKIP otherwise.
GO       ?= $(shell command -v go 2>/dev/null)
GO_TARGETS := $(patsubst tests/targets/%/main.go,%,$(wildcard tests/targets/*/main.go))
ifneq ($(GO),)
TARGET_BIN += $(GO_TARGETS:%=$(B)/tests/targets/%)
endif
# heapload linked against other allocators, and a plugin that brings
# jemalloc, where their Debian -dev packages are installed (scripts/install-deps).
ALLOCATORS := $(foreach a,jemalloc tcmalloc mimalloc,$(if $(wildcard /usr/lib/x86_64-linux-gnu/lib$(a).so),$(a)))
TARGET_BIN += $(ALLOCATORS:%=$(B)/tests/targets/injectee-%) $(B)/tests/targets/injectee-nopie
TARGET_BIN += $(ALLOCATORS:%=$(B)/tests/targets/heapload-%) \
	$(if $(filter jemalloc,$(ALLOCATORS)),$(B)/tests/targets/libheapplugin.so $(B)/tests/targets/mallocext-jemalloc \
		$(B)/tests/targets/heapload-static-jemalloc)
TARGET_SRC := $(filter-out tests/targets/heapplugin.c tests/targets/injplugin.c,$(TARGET_SRC))
TARGET_BIN += $(B)/tests/targets/libinjplugin.so
TARGET_BIN := $(filter-out $(B)/tests/targets/heapplugin $(B)/tests/targets/injplugin,$(TARGET_BIN))
# Source lines (tests/e2e/t_lines.sh, t_debugfiles.sh): lines is built
# -O2 -g; its stripped copies keep their debug information elsewhere: a
# file to put under a .build-id directory or serve from debuginfod (-bid),
# one named by .gnu_debuglink beside it (-link), MiniDebugInfo (-mini).
# Each copy is compiled with its own VARIANT, so each has its own build ID.
LINES_VARIANTS := bid link mini
TARGET_BIN += $(LINES_VARIANTS:%=$(B)/tests/targets/lines-%) $(B)/tests/targets/manyfn-stripped
# ... and a copy without a build ID, whose lines the line cache never keeps.
TARGET_BIN += $(B)/tests/targets/lines-nobid
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(B)/tests/tools/%)

# Test targets are built the way production code usually is: optimised and
# without frame pointers, so that only DWARF CFI can unwind them.
TARGET_CFLAGS := -O2 -fomit-frame-pointer -fno-inline-functions-called-once -pthread -Iinclude $(WARN)
TARGET_CXXFLAGS := -std=c++17 -O2 -fomit-frame-pointer -fno-inline-functions-called-once -pthread -Iinclude \
	-Wall -Wextra -Wshadow -Wformat=2

.PHONY: all tests check check-unit check-e2e stress fuzz demo deps install clean
all: $(PROG) $(SHIM)

$(PROTO_C) $(PROTO_H): proto/profile.proto
	@mkdir -p $(B)/proto
	protoc-c --proto_path=proto --c_out=$(B)/proto profile.proto

# x86_64 syscall names, from the kernel headers the C library uses.
$(B)/gen/syscalls.h:
	@mkdir -p $(dir $@)
	echo '#include <asm/unistd_64.h>' | $(CC) -E -dM - | \
		awk '$$2 ~ /^__NR_/ && $$3 ~ /^[0-9]+$$/ { n = $$2; sub("__NR_", "", n); print "[" $$3 "] = \"" n "\"," }' >$@.tmp
	mv $@.tmp $@

$(B)/obj/%.o: %.c | $(PROTO_H) $(B)/gen/syscalls.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/obj/proto/profile.pb-c.o: $(PROTO_C)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(CFLAGS) $(CPPFLAGS) -c -o $@ $<

$(B)/obj-pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(SHIM): $(SHIM_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-z,defs -o $@ $^ -ldl $(SHIM_LIBGCC) -pthread

$(B)/bench/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -o $@ $< -lm

$(B)/libcprof-core.a: $(CORE_OBJ)
	rm -f $@
	ar rcs $@ $^

$(PROG): $(B)/obj/attach/cli/main.o $(B)/libcprof-core.a
	$(CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ $(LIBS)

$(B)/tests/unit/test_shim_%: $(B)/obj/tests/unit/test_shim_%.o $(B)/obj-pic/shim/%.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ -lcmocka -lm -pthread
# contend.c parses its settings with sample.c's number parser.
$(B)/tests/unit/test_shim_contend: $(B)/obj-pic/shim/sample.o
# labels.c keeps its sets and slots in table.c's segment.
$(B)/tests/unit/test_shim_labels: $(B)/obj-pic/shim/table.o

$(B)/tests/unit/%: $(B)/obj/tests/unit/%.o $(B)/libcprof-core.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ -lcmocka $(LIBS)

$(B)/tests/tools/%: $(B)/obj/tests/tools/%.o $(B)/libcprof-core.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ $(LIBS)

$(B)/tests/targets/%-fp: tests/targets/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -fno-omit-frame-pointer -o $@ $< -lm

$(B)/tests/targets/%-static: tests/targets/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -static -o $@ $< -lm

$(B)/tests/targets/%-static-pie: tests/targets/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -fPIE -static-pie -o $@ $< -lm

$(B)/tests/targets/%-nopie: tests/targets/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -fno-pie -no-pie -o $@ $< -lm

$(B)/tests/targets/%-debugframe: tests/targets/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -g -fno-asynchronous-unwind-tables -fno-unwind-tables -o $@ $< -lm

$(B)/tests/targets/%: tests/targets/%/main.go
	@mkdir -p $(dir $@)
	cd tests/targets/$* && GOCACHE=$(CURDIR)/$(B)/go-cache $(GO) build -o $(CURDIR)/$@ main.go
# jemalloc linked into the program itself: its malloc comes ahead of the shim's.
$(B)/tests/targets/heapload-static-jemalloc: tests/targets/heapload.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -o $@ $< -Wl,-Bstatic -ljemalloc -Wl,-Bdynamic -lm

$(B)/tests/targets/heapload-%: tests/targets/heapload.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -o $@ $< -Wl,--no-as-needed -l$* -Wl,--as-needed -lm

# injectee loads the shim itself (dlopen) and reads its segment (shim/segment.h).
# Its RUNPATH is its own directory: it loads libinjplugin.so by bare name too.
$(B)/tests/targets/injectee: tests/targets/injectee.c shim/segment.h
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -I. -o $@ $< -ldl -Wl,--enable-new-dtags,-rpath,'$$ORIGIN'

# Non-PIE, and taking malloc's address: the arm must refuse, not call itself.
$(B)/tests/targets/injectee-nopie: tests/targets/injectee.c shim/segment.h
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -I. -no-pie -fno-pie -o $@ $< -ldl

$(B)/tests/targets/injectee-%: tests/targets/injectee.c shim/segment.h
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -I. -o $@ $< -Wl,--no-as-needed -l$* -Wl,--as-needed -ldl

$(B)/tests/targets/libinjplugin.so: tests/targets/injplugin.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -fPIC -shared -o $@ $<

$(B)/tests/targets/mallocext-%: tests/targets/mallocext.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -o $@ $< -Wl,--no-as-needed -l$* -Wl,--as-needed -lm

$(B)/tests/targets/libheapplugin.so: tests/targets/heapplugin.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -fPIC -shared -o $@ $< -ljemalloc

$(B)/tests/targets/lines: tests/targets/lines.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -g -o $@ $< -lm

$(B)/tests/targets/lines-%.full: tests/targets/lines.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -g -DVARIANT='"$*"' -o $@ $< -lm

$(B)/tests/targets/lines-nobid: tests/targets/lines.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -g -DVARIANT='"nobid"' -Wl,--build-id=none -o $@ $< -lm

$(B)/tests/targets/lines-bid: $(B)/tests/targets/lines-bid.full
	objcopy --only-keep-debug $< $@.debug
	objcopy --strip-all $< $@

$(B)/tests/targets/lines-link: $(B)/tests/targets/lines-link.full
	objcopy --only-keep-debug $< $@.debug
	objcopy --strip-all --add-gnu-debuglink=$@.debug $< $@

# Fedora's recipe: the functions .dynsym lacks, as an xz-compressed ELF in .gnu_debugdata.
$(B)/tests/targets/lines-mini: $(B)/tests/targets/lines-mini.full
	nm -D --format=posix --defined-only $< | awk '{ print $$1 }' | sort >$@.dynsyms
	nm --format=posix --defined-only $< | awk '$$2 ~ /^[Tt]$$/ { print $$1 }' | sort >$@.funcs
	comm -13 $@.dynsyms $@.funcs >$@.keep
	objcopy --only-keep-debug $< $@.dbg
	objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=$@.keep $@.dbg $@.minidebug
	rm -f $@.minidebug.xz && xz -k $@.minidebug
	objcopy --strip-all --remove-section .comment --add-section .gnu_debugdata=$@.minidebug.xz $< $@
	rm -f $@.dynsyms $@.funcs $@.keep $@.dbg $@.minidebug $@.minidebug.xz

$(B)/tests/targets/%-stripped: $(B)/tests/targets/%
	objcopy --strip-all $< $@

$(B)/tests/targets/%: tests/targets/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -o $@ $< -lm

# Its frame's untouched pages are the point: no stack-clash probes.
$(B)/tests/targets/holeyframe: tests/targets/holeyframe.c
	@mkdir -p $(dir $@)
	$(CC) $(TARGET_CFLAGS) -fno-stack-clash-protection -o $@ $<

$(B)/tests/targets/%: tests/targets/%.cc
	@mkdir -p $(dir $@)
	$(CXX) $(TARGET_CXXFLAGS) -o $@ $<

tests: $(PROG) $(SHIM) $(UNIT_BIN) $(TARGET_BIN) $(TOOL_BIN) $(BENCH_BIN)

deps:
	scripts/install-deps test

check:
	scripts/install-deps test
	$(MAKE) tests
	$(MAKE) check-unit check-e2e

check-unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

check-e2e: tests
	CPROF_BUILD=$(CURDIR)/$(B) CPROF_SANITIZED=$(if $(SANITIZE),1,0) tests/e2e/run
	CPROF_BUILD=$(CURDIR)/$(B) CPROF_SANITIZED=$(if $(SANITIZE),1,0) tests/hostile/run

# libFuzzer harnesses, built with clang and ASan+UBSan against the parsers
# of untrusted input; each runs FUZZ_SECONDS from its corpus in tests/fuzz.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
FUZZ_LIB := $(wildcard common/*.c) unwind/maps.c unwind/elfimg.c unwind/symtab.c unwind/cfitab.c \
	unwind/dwlines.c unwind/dwguard.c unwind/dwfuncs.c unwind/debugfind.c unwind/minidebug.c unwind/perfmap.c unwind/linetab.c \
	attach/source/segread.c attach/ptrace/sigframe.c attach/perf/ring.c attach/push/parse.c

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -I. -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $< $(FUZZ_LIB) -ldw -lelf -llzma -lz -pthread

fuzz:
	scripts/install-deps fuzz
	$(MAKE) $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do n=$${f#build-fuzz/fuzz_}; \
		mkdir -p build-fuzz/corpus/$$n; \
		echo "== fuzz $$n for $(FUZZ_SECONDS)s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
			build-fuzz/corpus/$$n tests/fuzz/corpus/$$n 2>&1 | \
			grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|crash|leak' || true; \
		test -z "$$(ls crash-* leak-* timeout-* oom-* 2>/dev/null)" || { echo "fuzz $$n found a failure"; exit 1; }; \
	done

stress:
	scripts/install-deps test
	$(MAKE) tests
	CPROF_BUILD=$(CURDIR)/$(B) CPROF_STRESS=10 tests/e2e/run faults
	CPROF_BUILD=$(CURDIR)/$(B) CPROF_STRESS=10 CPROF_TEST_CASES=cycles bash tests/e2e/t_inject.sh

demo:
	scripts/install-deps test
	$(MAKE) all $(B)/tests/targets/demo
	scripts/demo

# cprof.h is header only (its functions look the shim up at run time): the
# pkg-config file gives its include path and -ldl (dlsym is in libc itself
# from glibc 2.34 on; the flag is harmless there).
install: $(PROG) $(SHIM)
	install -D -m 0755 $(PROG) $(DESTDIR)$(PREFIX)/bin/cprof-attach
	install -D -m 0755 $(SHIM) $(DESTDIR)$(PREFIX)/lib/libcprof.so
	install -D -m 0644 doc/cprof-attach.1 $(DESTDIR)$(PREFIX)/share/man/man1/cprof-attach.1
	install -D -m 0644 include/cprof.h $(DESTDIR)$(PREFIX)/include/cprof.h
	@mkdir -p $(DESTDIR)$(PREFIX)/lib/pkgconfig
	sed 's|@PREFIX@|$(PREFIX)|' scripts/cprof.pc.in >$(DESTDIR)$(PREFIX)/lib/pkgconfig/cprof.pc

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(B)/obj $(B)/obj-pic -name '*.d' 2>/dev/null)
.SECONDARY:

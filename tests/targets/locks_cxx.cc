/*
 * locks_cxx — the C++ counterpart of locks.c: known contention on
 * std::mutex, std::condition_variable and std::shared_mutex, which reach
 * libcprof.so through libstdc++ (pthread_mutex_lock and _unlock inline
 * from <mutex>, pthread_cond_wait inside libstdc++, pthread_cond_clockwait
 * inline for wait_for, the pthread_rwlock functions inline from
 * <shared_mutex>, pthread_join from std::thread::join). Sites:
 *
 *   holder       locks M in holder_acquire(), keeps it ~HOLD_US
 *                (sleeping) in holder_hold(), unlocks it in
 *                holder_release(), rests HOLD_US / 4
 *   2 waiters    std::lock_guard on M in waiter_take() (~10 us of work)
 *   cond waiter  cv.wait() in cond_waiter()
 *   timed waiter cv.wait_for(2 ms) in cond_waiter_timed()
 *   2 readers    std::shared_lock on RW in reader_share() (~20 us of
 *                work, then a 200 us rest)
 *   writer       std::unique_lock on RW in writer_update() every 5 ms,
 *                held 100 us
 *   signaller    every 3 ms: notify_all under CM in signal_tick()
 *
 * Each thread times its own waits (std::chrono::steady_clock around each
 * lock and wait); the output is locks.c's: "ready PID", then on SIGUSR1
 * (and at the end with -s) "wait SITE COUNT NS" per site, "lockwait LOCK
 * COUNT NS" for the std::mutex locks (M, CM) and "end"; with -s SECONDS
 * the threads stop, main joins them in stop_all() and prints "done", then
 * waits to be killed. Site functions are extern "C" so that their names
 * read plainly in a profile.
 *
 * Usage: locks_cxx [-s SECONDS] [-h HOLD_US]
 */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <unistd.h>

extern "C" {
void holder_acquire(void);
void holder_hold(void);
void holder_release(void);
void waiter_take(void);
void cond_waiter(void);
void cond_waiter_timed(void);
void reader_share(void);
void writer_update(void);
void signal_tick(void);
void stop_all(std::vector<std::thread> *t);
}

namespace {

enum { S_HOLDER, S_WAITER, S_COND, S_COND_TIMED, S_READER, S_WRITER, S_SIGNAL, S_STOP, NSITES };
const char *const site_name[NSITES] = {
	"holder_acquire", "waiter_take", "cond_waiter", "cond_waiter_timed",
	"reader_share", "writer_update", "signal_tick", "stop_all",
};
enum { L_M, L_CM, NLOCKS };
const char *const lock_name[NLOCKS] = { "M", "CM" };

struct tally {
	std::atomic<unsigned long long> count{ 0 }, ns{ 0 };
};
tally sites[NSITES], locks[NLOCKS];

std::mutex M, CM;
std::condition_variable C;
std::shared_mutex RW;
unsigned long gen;
std::atomic<bool> stop{ false };
long hold_us = 1000;
volatile unsigned long sink;
volatile std::sig_atomic_t report;

using clk = std::chrono::steady_clock;

unsigned long long since(clk::time_point t0)
{
	return (unsigned long long)std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now() - t0)
		.count();
}

void add(tally &t, unsigned long long d)
{
	t.count += 1;
	t.ns += d;
}

void rest_us(long us)
{
	std::this_thread::sleep_for(std::chrono::microseconds(us));
}

void spin_us(long us)
{
	auto end = clk::now() + std::chrono::microseconds(us);

	while (clk::now() < end)
		for (unsigned i = 0; i < 100; i++)
			sink = sink + i;
}

/* After a call that must keep its own return address (no tail call). */
inline void no_tail_call()
{
	__asm__ volatile("" ::: "memory");
}

} // namespace

extern "C" __attribute__((noinline)) void holder_acquire(void)
{
	auto t0 = clk::now();

	M.lock();
	unsigned long long d = since(t0);
	add(sites[S_HOLDER], d);
	add(locks[L_M], d);
}

extern "C" __attribute__((noinline)) void holder_hold(void)
{
	rest_us(hold_us);
}

extern "C" __attribute__((noinline)) void holder_release(void)
{
	M.unlock();
	no_tail_call();
}

extern "C" __attribute__((noinline)) void waiter_take(void)
{
	auto t0 = clk::now();
	{
		std::lock_guard<std::mutex> g(M);
		unsigned long long d = since(t0);

		add(sites[S_WAITER], d);
		add(locks[L_M], d);
		spin_us(10);
	}
	no_tail_call();
}

/* Waits for the signaller's next round (or its timeout, timed). */
static inline __attribute__((always_inline)) void cond_round(int site, bool timed)
{
	auto t0 = clk::now();
	std::unique_lock<std::mutex> lk(CM);
	unsigned long long d = since(t0), seen = gen;

	add(sites[site], d);
	add(locks[L_CM], d);
	while (gen == seen && !stop) {
		t0 = clk::now();
		if (timed) {
			std::cv_status st = C.wait_for(lk, std::chrono::milliseconds(2));
			add(sites[site], since(t0));
			if (st == std::cv_status::timeout)
				break;
		} else {
			C.wait(lk);
			add(sites[site], since(t0));
		}
	}
}

extern "C" __attribute__((noinline)) void cond_waiter(void)
{
	cond_round(S_COND, false);
}

extern "C" __attribute__((noinline)) void cond_waiter_timed(void)
{
	cond_round(S_COND_TIMED, true);
}

extern "C" __attribute__((noinline)) void reader_share(void)
{
	auto t0 = clk::now();
	{
		std::shared_lock<std::shared_mutex> r(RW);

		add(sites[S_READER], since(t0));
		spin_us(20);
	}
	no_tail_call();
}

extern "C" __attribute__((noinline)) void writer_update(void)
{
	auto t0 = clk::now();
	{
		std::unique_lock<std::shared_mutex> w(RW);

		add(sites[S_WRITER], since(t0));
		rest_us(100);
	}
	no_tail_call();
}

extern "C" __attribute__((noinline)) void signal_tick(void)
{
	auto t0 = clk::now();
	{
		std::lock_guard<std::mutex> g(CM);
		unsigned long long d = since(t0);

		add(sites[S_SIGNAL], d);
		add(locks[L_CM], d);
		gen++;
	}
	C.notify_all();
	no_tail_call();
}

extern "C" __attribute__((noinline)) void stop_all(std::vector<std::thread> *t)
{
	stop = true;
	for (auto &th : *t) {
		auto t0 = clk::now();

		th.join();
		add(sites[S_STOP], since(t0));
	}
}

static void print_tallies()
{
	for (int i = 0; i < NSITES; i++)
		std::printf("wait %s %llu %llu\n", site_name[i], sites[i].count.load(), sites[i].ns.load());
	for (int i = 0; i < NLOCKS; i++)
		std::printf("lockwait %s %llu %llu\n", lock_name[i], locks[i].count.load(),
			    locks[i].ns.load());
	std::printf("end\n");
	std::fflush(stdout);
}

static void on_usr1(int)
{
	report = 1;
}

int main(int argc, char **argv)
{
	clk::time_point end{};
	bool timed_run = false;
	int opt;

	while ((opt = getopt(argc, argv, "s:h:")) != -1) {
		switch (opt) {
		case 's':
			end = clk::now() + std::chrono::milliseconds((long)(std::atof(optarg) * 1000));
			timed_run = true;
			break;
		case 'h':
			hold_us = std::atol(optarg) > 0 ? std::atol(optarg) : 1000;
			break;
		default:
			std::fprintf(stderr, "usage: locks_cxx [-s SECONDS] [-h HOLD_US]\n");
			return 2;
		}
	}
	std::signal(SIGUSR1, on_usr1);
	std::vector<std::thread> t;
	t.emplace_back([] {
		while (!stop) {
			holder_acquire();
			holder_hold();
			holder_release();
			rest_us(hold_us / 4);
		}
	});
	for (int i = 0; i < 2; i++)
		t.emplace_back([] {
			while (!stop) {
				waiter_take();
				rest_us(hold_us / 2);
			}
		});
	t.emplace_back([] {
		while (!stop)
			cond_waiter();
	});
	t.emplace_back([] {
		while (!stop)
			cond_waiter_timed();
	});
	for (int i = 0; i < 2; i++)
		t.emplace_back([] {
			while (!stop) {
				reader_share();
				rest_us(200);
			}
		});
	t.emplace_back([] {
		while (!stop) {
			writer_update();
			rest_us(5000);
		}
	});
	t.emplace_back([] {
		while (!stop) {
			rest_us(3000);
			signal_tick();
		}
		{
			std::lock_guard<std::mutex> g(CM);
			gen++;
		}
		C.notify_all();
	});
	std::printf("ready %d\n", (int)getpid());
	std::fflush(stdout);
	while (!timed_run || clk::now() < end) {
		rest_us(20000);
		if (report) {
			report = 0;
			print_tallies();
		}
	}
	stop_all(&t);
	print_tallies();
	std::printf("done\n");
	std::fflush(stdout);
	for (;;)
		pause();
}

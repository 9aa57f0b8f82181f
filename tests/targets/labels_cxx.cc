/*
 * labels_cxx — doc/labels.md's C++ RAII wrapper for include/cprof.h, used as
 * a program would: a scope object pushes labels and its destructor pops
 * them, also when an exception leaves the scope. The main thread enters
 * job=outer, then a nested scope (job=inner step=1) that throws, and
 * waits in outer_wait() with only job=outer in force; a worker thread
 * waits in inner_wait() inside job=inner step=2. Prints "ready PID
 * active=0|1" once both wait; with -n it prints "done active=0|1" and
 * exits instead of waiting.
 */
#include <cprof.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <unistd.h>

/* doc/labels.md's wrapper: labels for the lifetime of a scope. */
class cprof_scope {
public:
	template <typename... S> explicit cprof_scope(const char *key, const char *value, S... more)
	{
		cprof_labels_push(key, value, more..., static_cast<const char *>(nullptr));
	}
	~cprof_scope() { cprof_labels_pop(); }
	cprof_scope(const cprof_scope &) = delete;
	cprof_scope &operator=(const cprof_scope &) = delete;
};

static std::atomic<int> waiting{0};
static bool once;

__attribute__((noinline)) void inner_wait();
__attribute__((noinline)) void outer_wait();

__attribute__((noinline)) void inner_wait()
{
	waiting++;
	while (!once)
		pause();
}

__attribute__((noinline)) void outer_wait()
{
	waiting++;
	while (!once)
		pause();
}

static void fail_inside()
{
	cprof_scope s("job", "inner", "step", "1");
	throw std::runtime_error("leaves the scope");
}

int main(int argc, char **argv)
{
	once = argc > 1 && !std::strcmp(argv[1], "-n");
	std::thread worker([] {
		cprof_scope s("job", "inner", "step", "2");
		inner_wait();
	});
	{
		cprof_scope outer("job", "outer");
		try {
			fail_inside();
		} catch (const std::exception &) {
		}
		while (!once && waiting.load() < 1)
			usleep(1000);
		if (!once) {
			std::printf("ready %d active=%d\n", (int)getpid(), cprof_labels_active());
			std::fflush(stdout);
		}
		outer_wait();
	}
	worker.join();
	std::printf("done active=%d\n", cprof_labels_active());
	return 0;
}

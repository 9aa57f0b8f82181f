/*
 * test_troot.c — opening what a target named, as the target would
 * (common/troot.h), on trees crafted in a temporary directory, each case
 * run twice: with openat2() and with the walk that stands in for it. A
 * path cannot leave the root (an absolute link, "../../..", a loop, the
 * 41st link, a magic link of /proc mounted inside the root); a FIFO (no
 * block), a socket, a device, a directory, a final link when links are
 * not followed and a file of /proc are refused with their reason; under
 * another user's credentials a root-only file, a file in a directory it
 * may not search and a file of a group it lacks are refused, with the
 * switch of credentials and with the owner/mode check that replaces it,
 * and the thread's own credentials are back after each; the parse of a
 * status file's ids; a chrooted process's paths in its own terms; debugfind's refusal of huge and sparse files; the
 * note helpers (once per key, control characters escaped).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/troot.h"
#include "unwind/debugfind.h"

static char top[64];    /* the temporary directory */
static char rootp[80]; /* top/root: the target's root */
static int rootfd = -1;

static void put(const char *rel, const char *text, mode_t mode)
{
	char p[600];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(p, mode), 0);
}

static void lnk(const char *target, const char *rel)
{
	char p[700];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_int_equal(symlink(target, p), 0);
}

static void dir(const char *rel, mode_t mode)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_int_equal(mkdir(p, mode), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static int setup(void **state)
{
	char p[600], t[600];
	struct sockaddr_un sa;
	int i, s;

	(void)state;
	snprintf(top, sizeof(top), "/tmp/cprof-troot.XXXXXX");
	if (!mkdtemp(top))
		return -1;
	chmod(top, 0755);
	snprintf(rootp, sizeof(rootp), "%s/root", top);
	dir("outside", 0755);
	put("outside/secret", "outside", 0644);
	dir("root", 0755);
	dir("root/outside", 0755);
	put("root/outside/secret", "inside", 0644);
	put("root/file", "file", 0644);
	dir("root/dir", 0755);
	dir("root/proc", 0755);
	snprintf(t, sizeof(t), "%s/outside/secret", top);
	lnk(t, "root/abs");              /* the host's path: inside the root, nothing */
	lnk("/outside/secret", "root/absin");
	lnk("../../../../../outside/secret", "root/dir/up");
	lnk("loop2", "root/loop1");
	lnk("loop1", "root/loop2");
	lnk("file", "root/tofile");
	lnk("private", "root/toprivate");
	/* chain: c0 -> c1 -> ... -> c44 -> file */
	for (i = 0; i < 45; i++) {
		snprintf(t, sizeof(t), i == 44 ? "file" : "c%d", i + 1);
		snprintf(p, sizeof(p), "root/c%d", i);
		lnk(t, p);
	}
	snprintf(p, sizeof(p), "%s/root/fifo", top);
	if (mkfifo(p, 0644) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/root/dev", top);
	if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) < 0 && errno != EPERM)
		return -1; /* EPERM: not root, the case is skipped */
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/root/sock", top);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	close(s);
	/* For another user's credentials. */
	put("root/private", "private", 0600);
	put("root/group", "group", 0640);
	dir("root/closed", 0700);
	put("root/closed/pub", "pub", 0644);
	snprintf(p, sizeof(p), "%s/root/group", top);
	if (chown(p, 0, 4242) < 0 && geteuid() == 0)
		return -1;
	rootfd = open(rootp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return rootfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[400];

	(void)state;
	close(rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

/* Open path in the root (creds c); its text in out, or "" with *err its errno. */
static void read_in_root(const struct troot_cred *c, const char *path, unsigned flags, char *out,
			 size_t cap, int *err, const char **why)
{
	ssize_t n;
	int fd;

	*out = 0;
	*err = 0;
	fd = troot_openat(rootfd, c, path, flags, why);
	if (fd < 0) {
		*err = errno;
		return;
	}
	n = read(fd, out, cap - 1);
	out[n > 0 ? n : 0] = 0;
	close(fd);
}

static void both_ways(void (*body)(void))
{
	troot_test_no_openat2 = 0;
	body();
	troot_test_no_openat2 = 1;
	body();
	troot_test_no_openat2 = 0;
}

static void escapes_body(void)
{
	const char *why;
	char buf[64];
	int e;

	read_in_root(NULL, "/file", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "file");
	read_in_root(NULL, "file", 0, buf, sizeof(buf), &e, &why); /* relative: to the root */
	assert_string_equal(buf, "file");
	/* An absolute link to the host's path: the same path inside the root, which is not there. */
	read_in_root(NULL, "/abs", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "");
	assert_int_equal(e, ENOENT);
	assert_null(why);
	read_in_root(NULL, "/absin", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "inside");
	/* ".." at the root stays at the root. */
	read_in_root(NULL, "/dir/up", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "inside");
	read_in_root(NULL, "/../../../../outside/secret", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "inside");
	read_in_root(NULL, "/dir/../../dir/./../file", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "file");
	/* Loops and chains. */
	read_in_root(NULL, "/loop1", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
	assert_int_equal(e, ELOOP);
	assert_non_null(why);
	read_in_root(NULL, "/c0", TROOT_FOLLOW, buf, sizeof(buf), &e, &why); /* 45 links */
	assert_int_equal(e, ELOOP);
	read_in_root(NULL, "/c10", TROOT_FOLLOW, buf, sizeof(buf), &e, &why); /* 35 links */
	assert_string_equal(buf, "file");
	/* A final link, not followed: refused as what it is. */
	read_in_root(NULL, "/tofile", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "");
	assert_string_equal(why, "a symbolic link");
	read_in_root(NULL, "/tofile", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "file");
	/* A link in the middle is followed either way. */
	read_in_root(NULL, "/dir/../absin/../secret", 0, buf, sizeof(buf), &e, &why);
	assert_int_equal(e, ENOTDIR);
}

static void test_escapes(void **state)
{
	(void)state;
	both_ways(escapes_body);
}

static void types_body(void)
{
	const char *why;
	char buf[64];
	int e;

	alarm(10); /* a FIFO opened for reading without a writer would block */
	read_in_root(NULL, "/fifo", 0, buf, sizeof(buf), &e, &why);
	alarm(0);
	assert_string_equal(buf, "");
	assert_string_equal(why, "a FIFO");
	read_in_root(NULL, "/sock", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(why, "a socket");
	read_in_root(NULL, "/dir", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(why, "a directory");
	read_in_root(NULL, "/", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(why, "a directory");
	{
		char p[400];
		struct stat st;

		snprintf(p, sizeof(p), "%s/dev", rootp);
		if (lstat(p, &st) == 0) { /* made when root */
			read_in_root(NULL, "/dev", 0, buf, sizeof(buf), &e, &why);
			assert_string_equal(why, "a device");
		}
	}
}

static void test_types(void **state)
{
	(void)state;
	both_ways(types_body);
}

/* Files of /proc: a target did not write them, and /proc/self would be cprof. */
static void test_proc_refused(void **state)
{
	const char *why;
	int fd;

	(void)state;
	fd = troot_open(0, "/proc/self/status", TROOT_FOLLOW, &why);
	assert_int_equal(fd, -1);
	assert_string_equal(why, "a file of /proc or /sys");
	fd = troot_open(0, "/sys/kernel/mm/transparent_hugepage/enabled", 0, &why);
	if (fd >= 0)
		fail_msg("a file of /sys was opened");
}

/*
 * A magic link inside the root: /proc mounted there (a child in its own
 * mount namespace), and an fd of ours on a directory outside the root.
 * Neither /proc/self/fd/N nor /proc/self/root leads out.
 */
static void magic_body(void)
{
	char p[600], buf[64];
	const char *why;
	int st, e, out;
	pid_t c;

	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		snprintf(p, sizeof(p), "%s/outside", top);
		out = open(p, O_PATH | O_DIRECTORY);
		if (unshare(CLONE_NEWNS) < 0)
			_exit(77);
		snprintf(p, sizeof(p), "%s/proc", rootp);
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		if (mount("/proc", p, NULL, MS_BIND | MS_REC, NULL) < 0)
			_exit(77);
		/* The root as this namespace sees it, with /proc mounted in it. */
		rootfd = open(rootp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		read_in_root(NULL, "/proc/self/stat", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
		if (!why || strcmp(why, "a file of /proc or /sys"))
			_exit(5); /* /proc is there, its files refused */
		snprintf(p, sizeof(p), "/proc/self/fd/%d/secret", out);
		read_in_root(NULL, p, TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
		if (strcmp(buf, ""))
			_exit(1);
		snprintf(p, sizeof(p), "/proc/%d/fd/%d/secret", (int)getpid(), out);
		read_in_root(NULL, p, TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
		if (strcmp(buf, ""))
			_exit(2);
		snprintf(p, sizeof(p), "/proc/self/root%s/outside/secret", top);
		read_in_root(NULL, p, TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
		if (strcmp(buf, ""))
			_exit(3);
		/* ... and the magic link's text, read by the walk, is resolved in the root. */
		read_in_root(NULL, "/proc/self/root/outside/secret", TROOT_FOLLOW, buf, sizeof(buf), &e,
			     &why);
		if (strcmp(buf, troot_test_no_openat2 ? "inside" : "")) {
			fprintf(stderr, "walk %d: '%s' errno %d\n", troot_test_no_openat2, buf, e);
			_exit(4);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("magic links: skipped (no mount namespace)\n");
		return;
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_magic_links(void **state)
{
	(void)state;
	both_ways(magic_body);
}

static void assert_own_creds(uid_t u, gid_t g, int ngroups, int dumpable)
{
	gid_t gr[64];

	assert_int_equal((uid_t)syscall(SYS_setfsuid, (uid_t)-1), u);
	assert_int_equal((gid_t)syscall(SYS_setfsgid, (gid_t)-1), g);
	assert_int_equal(getgroups(64, gr), ngroups);
	assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), dumpable);
}

static void creds_body(void)
{
	struct troot_cred nobody = { 65534, 65534, 0, { 0 } }, grp = { 65534, 65534, 1, { 4242 } };
	uid_t u = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
	gid_t g = (gid_t)syscall(SYS_setfsgid, (gid_t)-1);
	int ng = getgroups(0, NULL), dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), e;
	const char *why;
	char buf[64];

	read_in_root(&nobody, "/file", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "file");
	assert_own_creds(u, g, ng, dumpable);
	read_in_root(&nobody, "/private", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "");
	assert_int_equal(e, EACCES);
	assert_string_equal(why, "not readable by the target");
	assert_own_creds(u, g, ng, dumpable);
	read_in_root(&nobody, "/group", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "");
	read_in_root(&grp, "/group", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "group");
	assert_own_creds(u, g, ng, dumpable);
	/* A link to a root-only file reads nothing either; links it may follow, it may. */
	read_in_root(&nobody, "/toprivate", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
	assert_int_equal(e, EACCES);
	read_in_root(&nobody, "/c40", TROOT_FOLLOW, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "file");
	/* Refusals of type under another's ids: the ids are back too. */
	read_in_root(&nobody, "/fifo", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(why, "a FIFO");
	assert_own_creds(u, g, ng, dumpable);
	read_in_root(&nobody, "/nothing", 0, buf, sizeof(buf), &e, &why);
	assert_int_equal(e, ENOENT);
	assert_own_creds(u, g, ng, dumpable);
	if (!troot_test_no_switch) {
		/* Only the switch sees a directory the target may not search. */
		read_in_root(&nobody, "/closed/pub", 0, buf, sizeof(buf), &e, &why);
		assert_int_equal(e, EACCES);
	}
	read_in_root(NULL, "/closed/pub", 0, buf, sizeof(buf), &e, &why);
	assert_string_equal(buf, "pub");
}

static void test_creds(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("credentials: skipped (not root)\n");
		return;
	}
	both_ways(creds_body);
	troot_test_no_switch = 1; /* as if cprof were not root: the owner/mode check */
	both_ways(creds_body);
	troot_test_no_switch = 0;
}

static void test_may_read(void **state)
{
	struct troot_cred c = { 1000, 100, 2, { 20, 30 } }, r = { 0, 0, 0, { 0 } };
	struct stat st;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.st_uid = 1000;
	st.st_gid = 0;
	st.st_mode = S_IFREG | 0044; /* the owner's bits decide for the owner */
	assert_false(troot_may_read(&st, &c));
	st.st_mode = S_IFREG | 0400;
	assert_true(troot_may_read(&st, &c));
	st.st_uid = 1;
	st.st_gid = 30;
	st.st_mode = S_IFREG | 0040;
	assert_true(troot_may_read(&st, &c));
	st.st_gid = 100;
	assert_true(troot_may_read(&st, &c));
	st.st_gid = 31;
	assert_false(troot_may_read(&st, &c));
	st.st_mode = S_IFREG | 0004;
	assert_true(troot_may_read(&st, &c));
	st.st_mode = S_IFREG | 0000;
	assert_true(troot_may_read(&st, &r));
}

static void test_cred_read(void **state)
{
	struct troot_cred c;
	gid_t gr[TROOT_MAX_GROUPS];
	int n, i;

	(void)state;
	assert_int_equal(troot_cred_read(getpid(), &c), 0);
	assert_int_equal(c.fsuid, geteuid());
	assert_int_equal(c.fsgid, getegid());
	n = getgroups(TROOT_MAX_GROUPS, gr);
	assert_int_equal((int)c.ngroups, n);
	for (i = 0; i < n; i++)
		assert_int_equal(c.groups[i], gr[i]);
	assert_int_equal(troot_cred_read(999999999, &c), -1);
}

static void test_crc_refusal(void **state)
{
	char p[400];
	struct stat st;
	int fd;

	(void)state;
	snprintf(p, sizeof(p), "%s/sparse", top);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 100ll << 30), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_non_null(strstr(debugfind_crc_refusal(&st), "larger"));
	assert_int_equal(ftruncate(fd, 1ll << 30), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_non_null(strstr(debugfind_crc_refusal(&st), "sparse"));
	{
		uint32_t crc;

		assert_int_equal(debugfind_crc(fd, &crc), -1);
		assert_int_equal(errno, EFBIG);
	}
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	assert_int_equal(fstat(fd, &st), 0);
	assert_null(debugfind_crc_refusal(&st));
	close(fd);
	unlink(p);
}

/* A child chrooted into the root: its maps' paths lose the root's prefix, others stay. */
static void test_target_path(void **state)
{
	char p[200], q[200];
	int pipefd[2], st;
	pid_t c;

	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		char x;

		if (chroot(rootp) < 0)
			_exit(77);
		close(pipefd[1]);
		(void)!read(pipefd[0], &x, 1); /* until the parent is done */
		_exit(0);
	}
	close(pipefd[0]);
	usleep(100000);
	snprintf(p, sizeof(p), "%s/dir/up", rootp);
	snprintf(q, sizeof(q), "%sx/file", rootp);
	if (geteuid() == 0) {
		assert_string_equal(troot_target_path(c, p), "/dir/up");
		assert_string_equal(troot_target_path(c, q), q);
		assert_string_equal(troot_target_path(c, "/usr/lib/x"), "/usr/lib/x");
	}
	assert_string_equal(troot_target_path(getpid(), p), p); /* our root is "/" */
	assert_string_equal(troot_target_path(0, p), p);
	close(pipefd[1]);
	assert_int_equal(waitpid(c, &st, 0), c);
}

static void test_notes(void **state)
{
	(void)state;
	assert_int_equal(troot_first_time("/a/path"), 1);
	assert_int_equal(troot_first_time("/a/path"), 0);
	assert_int_equal(troot_first_time("/b/path"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_proc_refused),
		cmocka_unit_test(test_magic_links),
		cmocka_unit_test(test_creds),
		cmocka_unit_test(test_may_read),
		cmocka_unit_test(test_cred_read),
		cmocka_unit_test(test_crc_refusal),
		cmocka_unit_test(test_target_path),
		cmocka_unit_test(test_notes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

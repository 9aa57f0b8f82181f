/*
 * test_outfile.c — atomic output: nothing at the final path before commit,
 * the whole content after it, no temporary file left either way, failures
 * found at open, and the mode 0666 less the umask; in a sticky directory
 * others may write to, another user's FIFO or link is refused. Each test
 * works in its own fresh directory under /tmp.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "writer/outfile.h"

struct dir {
	char path[64];
	char file[128];
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	snprintf(d->path, sizeof(d->path), "/tmp/cprof-outfile.XXXXXX");
	if (!mkdtemp(d->path)) {
		free(d);
		return -1;
	}
	snprintf(d->file, sizeof(d->file), "%s/out.pb.gz", d->path);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	struct dirent *e;
	DIR *dp = opendir(d->path);
	char p[512];

	while (dp && (e = readdir(dp))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", d->path, e->d_name);
			unlink(p);
		}
	}
	if (dp)
		closedir(dp);
	rmdir(d->path);
	free(d);
	return 0;
}

/* Entries of the directory, and the name of the last one in name. */
static int entries(const char *dir, char *name, size_t cap)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(dp);
	while ((e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		if (name)
			snprintf(name, cap, "%s", e->d_name);
	}
	closedir(dp);
	return n;
}

static void expect_content(const char *path, const char *want)
{
	char got[256];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, got, sizeof(got) - 1);
	close(fd);
	assert_true(n >= 0);
	got[n] = 0;
	assert_string_equal(got, want);
}

static void test_commit(void **state)
{
	struct dir *d = *state;
	struct outfile o;
	char name[256];
	struct stat st;

	assert_int_equal(outfile_open(&o, d->file), 0);
	/* The file has no name until the commit (O_TMPFILE). */
	assert_int_equal(entries(d->path, name, sizeof(name)), 0);
	assert_true(o.unnamed);
	assert_int_equal(outfile_write(&o, "hello ", 6), 0);
	assert_int_equal(outfile_write(&o, "world", 5), 0);
	assert_int_equal(stat(d->file, &st), -1);
	assert_int_equal(outfile_commit(&o), 0);
	assert_null(o.path);
	assert_null(o.tmp);
	assert_int_equal(o.fd, -1);
	assert_int_equal(entries(d->path, name, sizeof(name)), 1);
	assert_string_equal(name, "out.pb.gz");
	expect_content(d->file, "hello world");
}

/* A writer killed before its commit leaves nothing in the directory. */
static void test_killed(void **state)
{
	struct dir *d = *state;
	struct outfile o;
	int status;
	pid_t c = fork();

	assert_true(c >= 0);
	if (c == 0) {
		if (outfile_open(&o, d->file) < 0 || outfile_write(&o, "partial", 7) < 0)
			_exit(1);
		kill(getpid(), SIGKILL);
		_exit(2);
	}
	assert_int_equal(waitpid(c, &status, 0), c);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(entries(d->path, NULL, 0), 0);
}

static void test_replace(void **state)
{
	struct dir *d = *state;
	struct outfile o;
	int fd = open(d->file, O_WRONLY | O_CREAT, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "old content", 11), 11);
	close(fd);
	assert_int_equal(outfile_open(&o, d->file), 0);
	assert_int_equal(outfile_write(&o, "new", 3), 0);
	expect_content(d->file, "old content");
	assert_int_equal(outfile_commit(&o), 0);
	expect_content(d->file, "new");
	assert_int_equal(entries(d->path, NULL, 0), 1);
}

static void test_abort(void **state)
{
	struct dir *d = *state;
	struct outfile o;

	assert_int_equal(outfile_open(&o, d->file), 0);
	assert_int_equal(outfile_write(&o, "partial", 7), 0);
	outfile_abort(&o);
	assert_null(o.tmp);
	assert_int_equal(o.fd, -1);
	assert_int_equal(entries(d->path, NULL, 0), 0);
	outfile_abort(&o); /* twice is harmless */
}

static void test_relative_path(void **state)
{
	struct dir *d = *state;
	struct outfile o;
	char cwd[512];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(d->path), 0);
	assert_int_equal(outfile_open(&o, "rel.txt"), 0);
	assert_int_equal(outfile_write(&o, "r", 1), 0);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(chdir(cwd), 0);
	snprintf(d->file, sizeof(d->file), "%s/rel.txt", d->path);
	expect_content(d->file, "r");
}

/* Run outfile_open on path with stderr captured into msg. */
static int open_captured(struct outfile *o, const char *path, char *msg, size_t cap)
{
	int fds[2], saved = dup(2), r;
	ssize_t n;

	assert_int_equal(pipe(fds), 0);
	dup2(fds[1], 2);
	r = outfile_open(o, path);
	dup2(saved, 2);
	close(saved);
	close(fds[1]);
	n = read(fds[0], msg, cap - 1);
	close(fds[0]);
	msg[n > 0 ? n : 0] = 0;
	return r;
}

static void test_unwritable(void **state)
{
	struct dir *d = *state;
	struct outfile o;
	char msg[512], path[256];

	assert_int_equal(open_captured(&o, "/nonexistent-cprof-dir/out.pb.gz", msg, sizeof(msg)),
			 -1);
	assert_string_equal(msg,
			    "cprof: cannot write \"/nonexistent-cprof-dir/out.pb.gz\": "
			    "No such file or directory\n");
	assert_null(o.path);
	assert_null(o.tmp);
	assert_int_equal(o.fd, -1);
	/* /proc refuses new files even to root. */
	assert_int_equal(open_captured(&o, "/proc/cprof-out.pb.gz", msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "cannot write \"/proc/cprof-out.pb.gz\": "));
	/* A directory as the output. */
	assert_int_equal(open_captured(&o, d->path, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "Is a directory"));
	snprintf(path, sizeof(path), "%s/", d->path);
	assert_int_equal(open_captured(&o, path, msg, sizeof(msg)), -1);
	/* A read-only directory, which root may write anyway. */
	if (geteuid() != 0) {
		assert_int_equal(chmod(d->path, 0555), 0);
		assert_int_equal(open_captured(&o, d->file, msg, sizeof(msg)), -1);
		assert_non_null(strstr(msg, "Permission denied"));
		assert_int_equal(chmod(d->path, 0755), 0);
	}
	assert_int_equal(entries(d->path, NULL, 0), 0);
}

static void check_mode(struct dir *d, mode_t mask, mode_t want)
{
	struct outfile o;
	struct stat st;
	mode_t old = umask(mask);

	assert_int_equal(outfile_open(&o, d->file), 0);
	assert_int_equal(outfile_commit(&o), 0);
	umask(old);
	assert_int_equal(stat(d->file, &st), 0);
	assert_int_equal(st.st_mode & 07777, want);
	assert_int_equal(unlink(d->file), 0);
}

static void test_umask(void **state)
{
	check_mode(*state, 022, 0644);
	check_mode(*state, 027, 0640);
	check_mode(*state, 0, 0666);
	check_mode(*state, 077, 0600);
}

static void test_stdout(void **state)
{
	struct dir *d = *state;
	struct outfile o;
	int saved = dup(1), fd = open(d->file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0 && saved >= 0);
	dup2(fd, 1);
	close(fd);
	assert_int_equal(outfile_open(&o, "-"), 0);
	assert_null(o.path);
	assert_null(o.tmp);
	assert_int_equal(o.fd, 1);
	assert_int_equal(outfile_write(&o, "to stdout", 9), 0);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(o.fd, -1);
	dup2(saved, 1);
	close(saved);
	expect_content(d->file, "to stdout");
	assert_int_equal(entries(d->path, NULL, 0), 1);
}

/* A FIFO (like /dev/null, not a regular file) is written into, never renamed over. */
static void test_special_file(void **state)
{
	struct dir *d = *state;
	struct outfile o;
	struct stat st;
	char got[32] = "";
	int rd;

	assert_int_equal(mkfifo(d->file, 0600), 0);
	rd = open(d->file, O_RDONLY | O_NONBLOCK);
	assert_true(rd >= 0);
	assert_int_equal(outfile_open(&o, d->file), 0);
	assert_int_equal(outfile_write(&o, "piped", 5), 0);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(read(rd, got, sizeof(got) - 1), 5);
	assert_string_equal(got, "piped");
	close(rd);
	assert_int_equal(stat(d->file, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(entries(d->path, NULL, 0), 1);
}

/*
 * A sticky directory others may write to, like /tmp: a FIFO, a device or a
 * symbolic link another user planted at the path is refused at once (no
 * open that could block, nothing written through the link); one of ours
 * is used; a regular file of another user is replaced, not written into.
 */
static void test_shared_dir(void **state)
{
	struct dir *d = *state;
	struct outfile o;
	struct stat st;
	char msg[512], victim[160];
	int rd, fd;

	if (geteuid() != 0) {
		skip();
		return;
	}
	assert_int_equal(chmod(d->path, 01777), 0);
	snprintf(victim, sizeof(victim), "%s/victim", d->path);
	fd = open(victim, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	/* Another user's FIFO: refused without opening it (no reader: an open would block). */
	assert_int_equal(mkfifo(d->file, 0666), 0);
	assert_int_equal(lchown(d->file, 65534, 65534), 0);
	assert_int_equal(open_captured(&o, d->file, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "it is a FIFO of another user (uid 65534)"));
	assert_int_equal(o.fd, -1);
	/* Ours: written into, as asked. */
	assert_int_equal(lchown(d->file, 0, 0), 0);
	rd = open(d->file, O_RDONLY | O_NONBLOCK);
	assert_int_equal(outfile_open(&o, d->file), 0);
	assert_int_equal(outfile_write(&o, "ok", 2), 0);
	assert_int_equal(outfile_commit(&o), 0);
	close(rd);
	assert_int_equal(unlink(d->file), 0);
	/* Another user's link to our file: refused, the file untouched. */
	assert_int_equal(symlink(victim, d->file), 0);
	assert_int_equal(lchown(d->file, 65534, 65534), 0);
	assert_int_equal(open_captured(&o, d->file, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "it is a symbolic link of another user (uid 65534)"));
	/* ... and to a device. */
	assert_int_equal(unlink(d->file), 0);
	assert_int_equal(symlink("/dev/null", d->file), 0);
	assert_int_equal(lchown(d->file, 65534, 65534), 0);
	assert_int_equal(open_captured(&o, d->file, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "symbolic link of another user"));
	assert_int_equal(unlink(d->file), 0);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 0);
	/* Another user's regular file: replaced by ours (a new inode), never written into. */
	fd = open(d->file, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 65534, 65534), 0);
	close(fd);
	assert_int_equal(unlink(victim), 0);
	assert_int_equal(link(d->file, victim), 0); /* a second name, to see the old inode by */
	assert_int_equal(outfile_open(&o, d->file), 0);
	assert_int_equal(outfile_write(&o, "new", 3), 0);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 0); /* the hard link still holds the old, empty file */
	expect_content(d->file, "new");
	assert_int_equal(stat(d->file, &st), 0);
	assert_int_equal(st.st_uid, 0);
	/* Another user's link on the way: DIR/sub/out.pb.gz with sub a link to root's directory. */
	{
		char real[160], sub[160], out[200];

		snprintf(real, sizeof(real), "%s/real", d->path);
		snprintf(sub, sizeof(sub), "%s/sub", d->path);
		snprintf(out, sizeof(out), "%s/out.pb.gz", sub);
		assert_int_equal(mkdir(real, 0755), 0);
		assert_int_equal(symlink(real, sub), 0);
		assert_int_equal(lchown(sub, 65534, 65534), 0);
		assert_int_equal(open_captured(&o, out, msg, sizeof(msg)), -1);
		assert_non_null(strstr(msg, "\"sub\" is a symbolic link of another user (uid 65534)"));
		/* Ours: followed. */
		assert_int_equal(lchown(sub, 0, 0), 0);
		assert_int_equal(outfile_open(&o, out), 0);
		assert_int_equal(outfile_commit(&o), 0);
		snprintf(out, sizeof(out), "%s/out.pb.gz", real);
		assert_int_equal(unlink(out), 0);
		assert_int_equal(unlink(sub), 0);
		assert_int_equal(rmdir(real), 0);
	}
	assert_int_equal(chmod(d->path, 0700), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relative_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_umask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_special_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_dir, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

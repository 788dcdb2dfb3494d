// SPDX-License-Identifier: GPL-2.0
/*
 * The API handshake and device list of /dev/rpage, probed with good and
 * deliberately bad arguments. Needs rpage.ko loaded; when the harness
 * sets RPAGE_TEST_DEVICE, that RDMA device must be listed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "rpage_test.h"

FIXTURE(rpage) {
	int fd;
};

FIXTURE_SETUP(rpage)
{
	self->fd = rpage_open(0);
	ASSERT_LE(0, self->fd) {
		TH_LOG("open %s: %s", RPAGE_DEVICE_PATH, strerror(-self->fd));
	}
}

FIXTURE_TEARDOWN(rpage)
{
	close(self->fd);
}

static int handshake(int fd, __u32 api, __u64 features, struct rpage_api *out)
{
	struct rpage_api arg = { .api = api, .features = features };
	int ret = ioctl_errno(fd, RPAGE_IOC_API, &arg);

	if (out)
		*out = arg;
	return ret;
}

TEST(device_node_is_root_only)
{
	struct stat st;

	ASSERT_EQ(0, stat(RPAGE_DEVICE_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
}

TEST_F(rpage, handshake_reports_api_and_ioctls)
{
	struct rpage_api out;

	ASSERT_EQ(0, handshake(self->fd, RPAGE_API, 0, &out));
	EXPECT_EQ(RPAGE_API, out.api);
	EXPECT_EQ(RPAGE_FEATURES_ALL, out.features);
	EXPECT_EQ(RPAGE_API_IOCTLS, out.ioctls);
	EXPECT_EQ(0, out.reserved0);
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(0, out.reserved[i]);
	}
}

TEST_F(rpage, handshake_is_repeatable)
{
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, handshake(self->fd, RPAGE_API, 0, NULL));
	}
}

TEST_F(rpage, handshake_rejects_unknown_features)
{
	for (int bit = 0; bit < 64; bit++) {
		__u64 feature = 1ULL << bit;

		if (feature & RPAGE_FEATURES_ALL)
			continue;
		EXPECT_EQ(EINVAL, handshake(self->fd, RPAGE_API, feature, NULL)) {
			TH_LOG("feature bit %d accepted", bit);
		}
	}
	/* A rejected request leaves the file without a handshake. */
	struct rpage_list list = { 0 };

	EXPECT_EQ(EINVAL, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
}

TEST_F(rpage, handshake_rejects_other_api_versions)
{
	const __u32 versions[] = { 0, RPAGE_API + 1, 0xffffffff };

	struct rpage_api out;

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		EXPECT_EQ(EINVAL, handshake(self->fd, versions[i], 0, &out));
		/* The module says which version it speaks. */
		EXPECT_EQ(RPAGE_API, out.api);
	}
}

TEST_F(rpage, handshake_unseen_by_the_caller_does_not_count)
{
	struct rpage_list list = { 0 };
	struct rpage_api *ro;

	/* A read-only page: the kernel can read the request, not answer. */
	ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro->api = RPAGE_API;
	ASSERT_EQ(0, mprotect(ro, 4096, PROT_READ));
	EXPECT_EQ(EFAULT, ioctl_errno(self->fd, RPAGE_IOC_API, ro));
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
	munmap(ro, 4096);
}

TEST_F(rpage, handshake_rejects_reserved_fields)
{
	struct rpage_api arg = { .api = RPAGE_API, .reserved0 = 1 };

	EXPECT_EQ(EINVAL, ioctl_errno(self->fd, RPAGE_IOC_API, &arg));
	for (int i = 0; i < 4; i++) {
		memset(&arg, 0, sizeof(arg));
		arg.api = RPAGE_API;
		arg.reserved[i] = 1ULL << 40;
		EXPECT_EQ(EINVAL, ioctl_errno(self->fd, RPAGE_IOC_API, &arg));
	}
}

TEST_F(rpage, known_command_with_wrong_size_or_direction)
{
	struct { struct rpage_api api; __u64 extra; } big = {
		.api.api = RPAGE_API,
	};
	struct rpage_api arg = { .api = RPAGE_API };

	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IOWR(RPAGE_IOC_MAGIC, _RPAGE_API, big), &big));
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IOWR(RPAGE_IOC_MAGIC, _RPAGE_API, __u64), &arg));
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IOR(RPAGE_IOC_MAGIC, _RPAGE_API, struct rpage_api), &arg));
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IOW(RPAGE_IOC_MAGIC, _RPAGE_API, struct rpage_api), &arg));
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IO(RPAGE_IOC_MAGIC, _RPAGE_API), &arg));
}

/* The lowest command number the module does not announce. */
#define RPAGE_FIRST_UNUSED_NR	__builtin_ctzll(~RPAGE_API_IOCTLS)

TEST_F(rpage, unknown_commands_are_enotty)
{
	struct rpage_api arg = { .api = RPAGE_API };
	/* The first command number past the last one defined. */
	const unsigned long cmds[] = {
		_IOWR(RPAGE_IOC_MAGIC, RPAGE_FIRST_UNUSED_NR, struct rpage_api),
		_IOWR(RPAGE_IOC_MAGIC, 0x3f, struct rpage_api),
		_IOWR(RPAGE_IOC_MAGIC, 0xff, struct rpage_api),
		_IOWR(RPAGE_IOC_MAGIC + 1, _RPAGE_API, struct rpage_api),
		_IOWR('x', _RPAGE_API, struct rpage_api),
		0,
	};

	/* The harness's EXPECT_ is two statements: keep the braces. */
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(ENOTTY, ioctl_errno(self->fd, cmds[i], &arg)) {
			TH_LOG("command %#lx", cmds[i]);
		}
	}
}

TEST_F(rpage, bad_user_pointers_are_efault)
{
	EXPECT_EQ(EFAULT, ioctl_errno(self->fd, RPAGE_IOC_API, NULL));
	EXPECT_EQ(EFAULT, ioctl_errno(self->fd, RPAGE_IOC_API, (void *)1));
	EXPECT_EQ(EFAULT, ioctl_errno(self->fd, RPAGE_IOC_API,
				      (void *)0xffffffffff600000ULL));
}

TEST_F(rpage, commands_need_the_handshake_first)
{
	struct rpage_list list = { 0 };

	EXPECT_EQ(EINVAL, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
	ASSERT_EQ(0, handshake(self->fd, RPAGE_API, 0, NULL));
	EXPECT_EQ(0, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
}

TEST_F(rpage, device_list_shows_the_rdma_device)
{
	const char *want = getenv("RPAGE_TEST_DEVICE");
	struct rpage_device_info infos[16];
	struct rpage_list list = { 0 };
	bool found = false;

	ASSERT_EQ(0, handshake(self->fd, RPAGE_API, 0, NULL));
	ASSERT_EQ(0, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
	if (!want && !list.count)
		SKIP(return, "no RDMA device and none expected");
	ASSERT_GE(16, list.count);

	memset(infos, 0xa5, sizeof(infos));
	memset(&list, 0, sizeof(list));
	list.entries = (uintptr_t)infos;
	list.capacity = 16;
	ASSERT_EQ(0, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
	for (__u32 i = 0; i < list.count; i++) {
		ASSERT_NE(NULL, memchr(infos[i].name, '\0', sizeof(infos[i].name)));
		EXPECT_LE(1, infos[i].port_count);
		for (int r = 0; r < 4; r++) {
			EXPECT_EQ(0, infos[i].reserved[r]);
		}
		if (want && !strcmp(infos[i].name, want))
			found = true;
	}
	if (want) {
		EXPECT_TRUE(found) {
			TH_LOG("%s not listed among %u devices", want, list.count);
		}
	}
	/* Entries past the count stay untouched. */
	EXPECT_EQ(0xa5, ((unsigned char *)&infos[list.count])[0]);
}

TEST_F(rpage, device_list_capacity_bounds_the_copy)
{
	struct rpage_device_info one[2];
	struct rpage_list list = { 0 };

	ASSERT_EQ(0, handshake(self->fd, RPAGE_API, 0, NULL));
	ASSERT_EQ(0, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
	if (!list.count)
		SKIP(return, "no RDMA device");

	memset(one, 0xa5, sizeof(one));
	memset(&list, 0, sizeof(list));
	list.entries = (uintptr_t)one;
	list.capacity = 1;
	ASSERT_EQ(0, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
	EXPECT_LE(1, list.count);
	EXPECT_EQ(0xa5, ((unsigned char *)&one[1])[0]);
}

TEST_F(rpage, device_list_rejects_bad_arguments)
{
	struct rpage_list list = { 0 };

	ASSERT_EQ(0, handshake(self->fd, RPAGE_API, 0, NULL));

	list.count = 1;
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));

	memset(&list, 0, sizeof(list));
	list.reserved[1] = 1;
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));

	memset(&list, 0, sizeof(list));
	list.capacity = 4;
	EXPECT_EQ(EFAULT, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));

	memset(&list, 0, sizeof(list));
	ASSERT_EQ(0, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST, &list));
	if (list.count) {
		memset(&list, 0, sizeof(list));
		list.capacity = 4;
		list.entries = 8;	/* the unmapped first page */
		EXPECT_EQ(EFAULT, ioctl_errno(self->fd, RPAGE_IOC_DEVICE_LIST,
					      &list));
	}
}

TEST(unprivileged_open_is_refused)
{
	pid_t pid;
	int status;

	if (geteuid() != 0)
		SKIP(return, "needs root to drop privileges");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(100);
		_exit(rpage_open(0) == -EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST(librpage_returns_negative_errno)
{
	struct rpage_api api = { .api = 0 };
	int fd = rpage_open(0);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, rpage_api(fd, &api));
	api.api = RPAGE_API;
	EXPECT_EQ(0, rpage_api(fd, &api));
	EXPECT_EQ(RPAGE_API, api.api);
	EXPECT_EQ(-EBADF, rpage_api(-1, &api));
	EXPECT_NE(NULL, rpage_lib_version());
	close(fd);
}

TEST_HARNESS_MAIN

#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int vg_parse_int(const char *s, size_t len, long long lo, long long hi, long long *out)
{
    if (!s)
        return -1;
    if (len == (size_t)-1)
        len = strlen(s);
    size_t i = 0;
    int negative = 0;
    if (i < len && s[i] == '-') {
        negative = 1;
        i++;
    }
    if (i == len)
        return -1;
    /* Accumulate as a negative number: its range holds LLONG_MIN too. */
    long long v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        int d = s[i] - '0';
        if (v < (LLONG_MIN + d) / 10)
            return -1;
        v = v * 10 - d;
    }
    if (!negative) {
        if (v == LLONG_MIN)
            return -1;
        v = -v;
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

const char *vg_list_item(const char *s, size_t *len)
{
    const char *end = strchr(s, ',');
    *len = end ? (size_t)(end - s) : strlen(s);
    return end ? end + 1 : NULL;
}

int vg_list_has(const char *list, const char *item)
{
    const size_t want = strlen(item);
    size_t n;
    for (const char *s = list, *next; s; s = next) {
        next = vg_list_item(s, &n);
        if (n == want && !strncmp(s, item, n))
            return 1;
    }
    return 0;
}

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a folder" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

vg_status vg_open_regular_file(const char *what, const char *path, int *fd)
{
    *fd = -1;
    /* O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return vg_fail(VG_ERR_IO, "%s: cannot open: %s", what, strerror(errno));
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        int err = errno;
        close(f);
        return vg_fail(VG_ERR_IO, "%s: %s", what, strerror(err));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        if (S_ISDIR(sb.st_mode))
            return vg_fail(VG_ERR_IO, "%s: is a folder, not a file", what);
        return vg_fail(VG_ERR_IO, "%s: is not a regular file (%s)", what, file_kind(sb.st_mode));
    }
    int flags = fcntl(f, F_GETFL);
    if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(f);
        return vg_fail(VG_ERR_IO, "%s: %s", what, strerror(err));
    }
    *fd = f;
    return VG_OK;
}

/* "larger than 16 MiB" reads better than its byte count. */
static vg_status too_large(const char *what, size_t max_bytes)
{
    if (max_bytes % ((size_t)1 << 20) == 0)
        return vg_fail(VG_ERR_LIMIT, "%s: larger than %zu MiB", what, max_bytes >> 20);
    return vg_fail(VG_ERR_LIMIT, "%s: larger than %zu bytes", what, max_bytes);
}

vg_status vg_read_whole_file(const char *what, const char *path, size_t max_bytes, char **buf,
                             size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd;
    vg_status st = vg_open_regular_file(what, path, &fd);
    if (st != VG_OK)
        return st;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (unsigned long long)sb.st_size > max_bytes) {
        close(fd);
        return too_large(what, max_bytes);
    }
    /* The size can change under us: the loop bounds what is read anyway. */
    size_t cap = 8192, n = 0;
    char *b = malloc(cap);
    int err = 0;
    while (b) {
        if (n > max_bytes) {
            free(b);
            close(fd);
            return too_large(what, max_bytes);
        }
        if (n + 1 == cap) {
            char *grown = realloc(b, cap * 2);
            if (!grown)
                free(b);
            b = grown;
            cap *= 2;
            continue;
        }
        ssize_t got = read(fd, b + n, cap - n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            err = errno;
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (!b)
        return vg_fail(VG_ERR_NO_MEMORY, "%s: out of memory", what);
    if (err) {
        free(b);
        return vg_fail(VG_ERR_IO, "%s: read error: %s", what, strerror(err));
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return VG_OK;
}

/* The folder holding path ("." when it names none). */
static void parent_of(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else
        snprintf(dir, size, "%.*s", (int)(slash == path ? 1 : slash - path), path);
}

int vg_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int vg_file_in_folder(const char *path, const char *dir)
{
    struct stat sp;
    char parent[4096];
    if (!path || !dir || lstat(path, &sp) != 0 || strlen(path) >= sizeof parent)
        return 0;
    parent_of(path, parent, sizeof parent);
    return vg_same_file(parent, dir);
}

vg_status vg_check_output_path(const char *what, const char *path)
{
    if (!path || !*path)
        return vg_fail(VG_ERR_IO, "%s: the output path is empty", what);
    size_t len = strlen(path);
    if (path[len - 1] == '/')
        return vg_fail(VG_ERR_IO, "%s: names a folder, not a file", what);
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        if (S_ISDIR(sb.st_mode))
            return vg_fail(VG_ERR_IO, "%s: is a folder, not a file", what);
        return vg_fail(VG_ERR_IO, "%s: exists and is not a regular file (%s)", what,
                       file_kind(sb.st_mode));
    }
    char dir[4096];
    if (len >= sizeof dir - 32)
        return vg_fail(VG_ERR_IO, "%s: path too long", what);
    parent_of(path, dir, sizeof dir);
    if (stat(dir, &sb) != 0)
        return vg_fail(VG_ERR_IO, "%s: folder %s: %s", what, dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return vg_fail(VG_ERR_IO, "%s: %s is not a folder", what, dir);
    /* The probe is the name the writers' temporary takes, so nothing else
     * in the folder can be hit. */
    char probe[4096 + 32];
    snprintf(probe, sizeof probe, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
        return vg_fail(VG_ERR_IO, "%s: cannot create a file in %s: %s", what, dir,
                       strerror(errno));
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    return VG_OK;
}

/* A live pid's temporary is left alone, whoever it belongs to; so is
 * anything that is not a regular file or whose suffix is not a plain
 * decimal pid.  Errors are ignored.  (A writer in another pid namespace
 * sharing the folder would look dead from here; voltgate's files are not
 * written that way.) */
void vg_remove_stale_temporaries(const char *file)
{
    const char *slash = strrchr(file, '/');
    const char *base = slash ? slash + 1 : file;
    char dir[4096];
    parent_of(file, dir, sizeof dir);
    char prefix[512];
    if (!*base || (size_t)snprintf(prefix, sizeof prefix, "%s.tmp.", base) >= sizeof prefix)
        return;
    size_t plen = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, plen) != 0)
            continue;
        const char *digits = e->d_name + plen;
        long long pid;
        if (digits[0] == '0' || vg_parse_int(digits, (size_t)-1, 1, 999999999, &pid) != 0 ||
            pid == (long long)getpid())
            continue;
        if (!(kill((pid_t)pid, 0) == -1 && errno == ESRCH))
            continue;
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode))
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

void vg_make_printable(char *msg)
{
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

vg_status vg_fail_one_line(vg_status s, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vg_make_printable(msg);
    return vg_fail(s, "%s", msg);
}

/* fsync of the folder holding path, so a rename into it lasts.  Best
 * effort: a folder that cannot be opened or synced changes nothing. */
static void sync_parent(const char *path)
{
    char dir[4096];
    parent_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

vg_status vg_write_file_atomic(const char *what, const char *path, const void *data, size_t len,
                               void (*before_rename)(const char *tmp))
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return vg_fail_one_line(VG_ERR_INVALID_ARG, "%s: path too long", what);
    }
    vg_remove_stale_temporaries(path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        int err = errno;
        vg_status st = vg_fail_one_line(VG_ERR_IO, "%s: cannot create %s: %s", what, tmp,
                                     strerror(err));
        errno = err;
        return st;
    }
    const char *p = data;
    size_t left = len;
    int err = 0;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = n < 0 ? errno : ENOSPC;
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    /* fsync before the rename, so a crash of the machine cannot leave the
     * new name on unwritten data; EINVAL or EROFS: a file that cannot be
     * synced (a device), nothing to wait for */
    if (!err && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
        err = errno;
    if (close(fd) != 0 && !err && errno != EINTR)
        err = errno;
    if (err) {
        unlink(tmp);
        vg_status st = vg_fail_one_line(VG_ERR_IO, "%s: writing %s (%zu of %zu bytes written): %s",
                                     what, tmp, len - left, len, strerror(err));
        errno = err;
        return st;
    }
    if (before_rename)
        before_rename(tmp);
    if (rename(tmp, path) != 0) {
        err = errno;
        unlink(tmp);
        vg_status st = vg_fail_one_line(VG_ERR_IO, "%s: rename from %s: %s", what, tmp,
                                     strerror(err));
        errno = err;
        return st;
    }
    sync_parent(path);
    return VG_OK;
}

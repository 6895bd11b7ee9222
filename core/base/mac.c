/* The rendezvous' proof of the job's secret: HMAC-SHA-256 from OpenSSL's libcrypto, loaded at
 * run time as NCCL is (the archive gains no link dependency; no cryptography is written here),
 * and the job's secret from HIDET_NCCL_JOB_SECRET_FILE or HIDET_NCCL_JOB_SECRET (core/base/kit.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/kit.h"

typedef const void *(*md_fn)(void);
typedef unsigned char *(*hmac_fn)(const void *md, const void *key, int key_len, const unsigned char *data,
                                  size_t data_len, unsigned char *out, unsigned int *out_len);
typedef int (*equal_fn)(const void *a, const void *b, size_t len);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct {
    md_fn sha256;
    hmac_fn hmac;
    equal_fn equal; /* CRYPTO_memcmp: a comparison whose time does not depend on where bytes differ */
    char error[512];
} g_crypto;

static void load(void) {
    static const char *const names[] = {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"};
    size_t used = (size_t)snprintf(g_crypto.error, sizeof g_crypto.error,
                                   "a job secret is set, but OpenSSL's libcrypto (HMAC-SHA-256) could not be loaded:");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            if (used < sizeof g_crypto.error)
                used += (size_t)snprintf(g_crypto.error + used, sizeof g_crypto.error - used, " %s (%s);", names[i],
                                         dlerror());
            continue;
        }
        g_crypto.sha256 = (md_fn)dlsym(h, "EVP_sha256");
        g_crypto.hmac = (hmac_fn)dlsym(h, "HMAC");
        g_crypto.equal = (equal_fn)dlsym(h, "CRYPTO_memcmp");
        if (g_crypto.sha256 && g_crypto.hmac && g_crypto.equal) {
            g_crypto.error[0] = '\0';
            HN_INFO("job secret: HMAC-SHA-256 from %s", names[i]);
            return;
        }
        if (used < sizeof g_crypto.error)
            used += (size_t)snprintf(g_crypto.error + used, sizeof g_crypto.error - used,
                                     " %s lacks EVP_sha256, HMAC or CRYPTO_memcmp;", names[i]);
        dlclose(h);
    }
}

int hidet_nccl__mac(const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t out[HN_MAC_BYTES],
                    char *why, size_t why_bytes) {
    pthread_once(&g_once, load);
    if (g_crypto.error[0] != '\0') {
        snprintf(why, why_bytes, "%s", g_crypto.error);
        return -1;
    }
    unsigned int out_len = 0;
    if (key_len > (size_t)HN_SECRET_MAX ||
        g_crypto.hmac(g_crypto.sha256(), key, (int)key_len, data, len, out, &out_len) == NULL ||
        out_len != HN_MAC_BYTES) {
        snprintf(why, why_bytes, "HMAC-SHA-256 failed");
        return -1;
    }
    return 0;
}

int hidet_nccl__mac_equal(const uint8_t a[HN_MAC_BYTES], const uint8_t b[HN_MAC_BYTES]) {
    pthread_once(&g_once, load);
    return g_crypto.equal != NULL && g_crypto.equal(a, b, HN_MAC_BYTES) == 0;
}

/* The secret file: a regular file of this user (or root), not readable or writable by group or
 * others, opened without following a link and checked on the descriptor it is read from. */
static int read_file(const char *path, uint8_t *out, size_t *len, char *why, size_t why_bytes) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_bytes, "HIDET_NCCL_JOB_SECRET_FILE %s: %s", path,
                 errno == ELOOP ? "a symbolic link (give the file itself)" : strerror(errno));
        return -1;
    }
    struct stat st = {0};
    const char *bad = NULL;
    if (fstat(fd, &st) != 0) bad = strerror(errno);
    else if (!S_ISREG(st.st_mode)) bad = "not a regular file";
    else if (st.st_uid != geteuid() && st.st_uid != 0) bad = "owned by another user";
    else if (st.st_mode & 077) bad = "readable or writable by group or others (chmod 600 it)";
    else if (st.st_size < HN_SECRET_MIN || st.st_size > HN_SECRET_MAX) bad = "not 16 .. 4096 bytes long";
    ssize_t got = bad == NULL ? read(fd, out, (size_t)st.st_size) : -1;
    close(fd);
    if (bad == NULL && got != st.st_size) bad = "could not be read whole";
    if (bad != NULL) {
        snprintf(why, why_bytes, "HIDET_NCCL_JOB_SECRET_FILE %s (mode %03o, owner uid %u): %s", path,
                 (unsigned)(st.st_mode & 0777), (unsigned)st.st_uid, bad);
        return -1;
    }
    *len = (size_t)got;
    while (*len > 0 && (out[*len - 1] == '\n' || out[*len - 1] == '\r')) (*len)--; /* `echo secret > file` */
    if (*len < HN_SECRET_MIN) {
        snprintf(why, why_bytes, "HIDET_NCCL_JOB_SECRET_FILE %s: %zu bytes of secret, fewer than %d", path, *len,
                 HN_SECRET_MIN);
        return -1;
    }
    return 0;
}

int hidet_nccl__job_secret(uint8_t out[HN_SECRET_MAX], size_t *len, char *why, size_t why_bytes) {
    const char *path = hidet_nccl__setting_str(HN_SETTING_JOB_SECRET_FILE);
    if (path != NULL) return read_file(path, out, len, why, why_bytes) == 0 ? 1 : -1;
    const char *text = hidet_nccl__setting_str(HN_SETTING_JOB_SECRET);
    if (text == NULL) return 0;
    *len = strlen(text);
    if (*len < HN_SECRET_MIN || *len > HN_SECRET_MAX) {
        snprintf(why, why_bytes, "HIDET_NCCL_JOB_SECRET holds %zu characters; a secret has %d .. %d", *len,
                 HN_SECRET_MIN, HN_SECRET_MAX);
        return -1;
    }
    memcpy(out, text, *len);
    return 1;
}

/*
 * replay — runs a fuzz target's entry point over a corpus with the normal
 * compiler, so `make check` replays every seed corpus (fuzz/seeds/<target>/)
 * in the sanitizer build: an input that once crashed a target stays in its
 * seeds and can never crash it again unnoticed. libFuzzer is not needed.
 *
 *   replay_<target> <file or directory>...
 *
 * Guarantees: every regular file named, or directly inside a directory named,
 * is fed to LLVMFuzzerTestOneInput once, in name order, after
 * LLVMFuzzerInitialize when the target defines one. Every input is read into
 * memory before initialisation (a target may chdir). Exit 0 only when at
 * least one input ran; a crash aborts (the sanitizers report it), a leak
 * fails at exit (LeakSanitizer), an unreadable or empty corpus exits 1.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct input {
    char *name;
    uint8_t *data;
    size_t size;
};

static struct input *inputs;
static size_t n_inputs, cap_inputs;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct input *)a)->name, ((const struct input *)b)->name);
}

static int read_input(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                fprintf(stderr, "replay: %s: out of memory\n", path);
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: %s: read error\n", path);
        free(buf);
        return -1;
    }
    if (n_inputs == cap_inputs) {
        cap_inputs = cap_inputs ? cap_inputs * 2 : 64;
        struct input *ni = realloc(inputs, cap_inputs * sizeof *inputs);
        if (!ni) {
            free(buf);
            return -1;
        }
        inputs = ni;
    }
    inputs[n_inputs].name = strdup(path);
    inputs[n_inputs].data = buf;
    inputs[n_inputs].size = len;
    n_inputs++;
    return 0;
}

static int add_arg(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return read_input(path);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        struct stat fs;
        if (stat(full, &fs) == 0 && S_ISREG(fs.st_mode))
            rc = read_input(full);
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (add_arg(argv[i]) < 0)
            return 1;
    if (n_inputs == 0) {
        fprintf(stderr, "replay: no inputs (a target without seeds tests nothing)\n");
        return 1;
    }
    qsort(inputs, n_inputs, sizeof *inputs, by_name);
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (size_t i = 0; i < n_inputs; i++) {
        /* named first, so a crash report says which input caused it */
        fprintf(stderr, "replay: %s (%zu bytes)\n", inputs[i].name, inputs[i].size);
        /* a private copy of exactly size bytes, as libFuzzer gives: ASan then
         * catches a read one past the end */
        uint8_t *copy = malloc(inputs[i].size ? inputs[i].size : 1);
        if (!copy)
            return 1;
        memcpy(copy, inputs[i].data, inputs[i].size);
        LLVMFuzzerTestOneInput(copy, inputs[i].size);
        free(copy);
    }
    printf("replay: %zu inputs, no crash\n", n_inputs);
    for (size_t i = 0; i < n_inputs; i++) {
        free(inputs[i].name);
        free(inputs[i].data);
    }
    free(inputs);
    return 0;
}

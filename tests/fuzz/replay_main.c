/* Runs the fuzz target over every file of the given directories (no libFuzzer needed):
 * the regression test for the committed corpus. Prints "N passed, N failed"-style counts. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    int files = 0;
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        if (d == NULL) {
            fprintf(stderr, "cannot open %s\n", argv[a]);
            return 1;
        }
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            FILE *f = fopen(path, "rb");
            if (f == NULL) continue;
            static uint8_t buf[1 << 21];
            size_t n = fread(buf, 1, sizeof buf, f);
            fclose(f);
            LLVMFuzzerTestOneInput(buf, n);
            files++;
        }
        closedir(d);
    }
    printf("replayed %d corpus files without a crash\n", files);
    return files > 0 ? 0 : 1;
}

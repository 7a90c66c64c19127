/*
 * Loads the probe library the way a JVM loads a JNI library (dlopen with
 * RTLD_LOCAL, no quiver symbols in the executable) and runs its round trip.
 *   probe_main LIBRARY FILE
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*probe_fn)(const char *path, char *msg, size_t msg_size);

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: probe_main LIBRARY FILE\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    probe_fn fn;
    *(void **)&fn = dlsym(lib, "probe_roundtrip");
    if (!fn) {
        fprintf(stderr, "dlsym probe_roundtrip: %s\n", dlerror());
        return 1;
    }
    char msg[1024] = "";
    int rc = fn(argv[2], msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "probe_roundtrip: error %d: %s\n", rc, msg);
        return 1;
    }
    printf("probe_roundtrip: wrote, read back and compared %s; zstd and lz4 round trips ok\n", argv[2]);
    dlclose(lib);
    return 0;
}

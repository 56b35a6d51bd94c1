// The memory allocator's settings, for the programs that run sweeps (the `clustersim`
// executable and the benchmarks; not the tests, nor the sanitizer build, whose ASan has its own
// allocator). Those programs are linked with jemalloc (Debian's libjemalloc-dev, found by
// pkg-config in the top CMakeLists.txt), which reads its options from this symbol when it starts
// (the `malloc_conf` global, jemalloc(3): "TUNING"; https://jemalloc.net/jemalloc.3.html). The
// MALLOC_CONF environment variable still overrides it, to experiment.
//
// narenas:1: one arena for every thread, so that the megabytes one sweep thread frees after a
// long pipeline's step (pass records, timings) are reused by the other threads instead of
// staying in that thread's own arena: with glibc's per-thread arenas the 11,520-configuration
// Turing-530B sweep held 318 MiB with --jobs 2 against 210 MiB with --jobs 1 (+51%); with this,
// 226 MiB against 224 MiB (+1%; linked, Release, /usr/bin/time -v). glibc's single arena
// (M_ARENA_MAX 1) did the same for memory but took a lock on every malloc (--jobs 2 ran a GPT-3
// sweep at 0.48x of one thread); jemalloc's per-thread caches (tcache, on by default: up to 32 KiB
// a size class) serve almost every allocation without the arena: in that GPT-3 sweep on 2
// threads 1.2% of the allocations took the arena's lock and none waited for it (its mutex
// statistics, MALLOC_CONF=stats_print). Freed pages go back to the system after jemalloc's default
// 10 s decay (dirty_decay_ms). jemalloc declares it `const char *malloc_conf` and only reads it;
// the dynamic linker binds jemalloc's weak definition to this one.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "narenas:1";
}

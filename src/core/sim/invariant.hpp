// The simulators' invariant walks (BlockPool::consistent, RadixCache::consistent)
// run after every step when checking is on, which the tests and the fuzz_trace
// target always ask for. Their comparisons take the same branches on every
// valid state, so the fuzzer learns nothing from tracing them; traced, they
// took about 40% of fuzz_trace's time (perf, 2026-12). KVPLAN_INVARIANT_WALK
// turns off coverage tracing for such a function only; AddressSanitizer and
// UBSan still check it. GCC has no such attribute and needs none (it builds
// no fuzzer here).
#pragma once

#if defined(__clang__)
#define KVPLAN_INVARIANT_WALK __attribute__((no_sanitize("coverage")))
#else
#define KVPLAN_INVARIANT_WALK
#endif

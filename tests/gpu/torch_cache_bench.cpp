/* ordo's cache of queue-ordered memory beside PyTorch's CUDA caching allocator, in one process,
 * on the same device, primary context and streams (ordo's queues' CUstreams, passed to PyTorch as
 * its cudaStream_t): the two workloads of backend-cuda/examples/ordered_memory_bench.rs.
 *   1. 1 MiB allocate + free in a loop on one stream (ordo_mem_alloc_async + ordo_mem_free_async,
 *      served by the queue's cached block; raw_alloc_with_stream + raw_delete, served by
 *      PyTorch's block pool): ns per pair, ABBA rounds of 1,000 pairs.
 *   2. The mixed workload: 8 threads on their own queues, each step allocating 6 buffers of sizes
 *      drawn from 256 B ... 64 MiB and freeing them in a shuffled order (the same sequence on both
 *      sides, one seed per thread): the slowest thread's ns per step, ABBA rounds.
 * Target (issue 50): ordo <= 1.0 of PyTorch on both. ordo's cache is set to 4 GiB
 * (ORDO_CACHE_BYTES) so that every thread's step fits, as PyTorch's pool keeps what it is given.
 * Built on the GPU machine against its torch (tests/gpu/run.sh torch): g++ -O2 -std=c++17 with
 * torch's include directories, libordo.a, -lc10 -lc10_cuda -ltorch_cpu -ltorch_cuda. */
#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

extern "C" {
#include "ordo.h"
}

#define OK(call)                                                                 \
  do {                                                                           \
    if ((call) != ORDO_SUCCESS) {                                                \
      std::fprintf(stderr, "%s: %s\n", #call, ordo_last_error_detail());         \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

static double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static const size_t SIZE = 1 << 20;
static const int PAIRS = 1000;
static const int ROUNDS = 10;
static const int THREADS = 8;
static const size_t MIXED_SIZES[6] = {256, 4 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20};
static const int MIXED_LIVE = 6;
static const int MIXED_STEPS = 50;

static ordo_device_t device;

/* ABBA rounds of PyTorch (A) and ordo (B): the row with each side's median and the per-round
 * ratio ordo / PyTorch, median [p25, p75]. */
static void abba(const char *name, const char *unit, const std::function<double()> &torch_side,
                 const std::function<double()> &ordo_side) {
  std::vector<double> t, o, r;
  for (int i = 0; i < ROUNDS; i++) {
    double t1 = torch_side(), o1 = ordo_side(), o2 = ordo_side(), t2 = torch_side();
    t.push_back((t1 + t2) / 2);
    o.push_back((o1 + o2) / 2);
    r.push_back((o1 + o2) / (t1 + t2));
  }
  std::sort(t.begin(), t.end());
  std::sort(o.begin(), o.end());
  std::sort(r.begin(), r.end());
  std::printf("| %s | PyTorch %.0f %s | ordo %.0f %s | ordo / PyTorch %.4f [%.4f, %.4f] | target <= 1.0 |\n", name,
              t[ROUNDS / 2], unit, o[ROUNDS / 2], unit, r[ROUNDS / 2], r[ROUNDS / 4], r[(3 * ROUNDS) / 4]);
  std::printf("BENCH_JSON [{\"name\":\"%s, ordo / PyTorch\",\"torch_ns\":%.1f,\"ordo_ns\":%.1f,\"ratio\":%.4f,"
              "\"q1\":%.4f,\"q3\":%.4f}]\n",
              name, t[ROUNDS / 2], o[ROUNDS / 2], r[ROUNDS / 2], r[ROUNDS / 4], r[(3 * ROUNDS) / 4]);
  std::fflush(stdout);
}

static void *torch_alloc(size_t size, cudaStream_t s) {
  return c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(size, s);
}
static void torch_free(void *p) { c10::cuda::CUDACachingAllocator::raw_delete(p); }

static void *ordo_alloc(size_t size, ordo_queue_t q) {
  void *p = nullptr;
  OK(ordo_mem_alloc_async(q, size, &p));
  return p;
}

/* One thread's mixed steps on `q` (its stream `s`): ns per step. */
static double mixed_steps(int thread, ordo_queue_t q, cudaStream_t s, bool use_ordo) {
  uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)(thread + 1);
  auto next = [&seed]() {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  void *live[MIXED_LIVE];
  double t0 = now_ns();
  for (int step = 0; step < MIXED_STEPS; step++) {
    for (int k = 0; k < MIXED_LIVE; k++) {
      size_t size = MIXED_SIZES[next() % 6];
      live[k] = use_ordo ? ordo_alloc(size, q) : torch_alloc(size, s);
    }
    for (int k = MIXED_LIVE - 1; k > 0; k--) std::swap(live[k], live[next() % (uint64_t)(k + 1)]);
    for (int k = 0; k < MIXED_LIVE; k++) {
      if (use_ordo)
        OK(ordo_mem_free_async(q, live[k]));
      else
        torch_free(live[k]);
    }
  }
  return (now_ns() - t0) / MIXED_STEPS;
}

int main() {
  setenv("ORDO_CACHE_BYTES", "4294967296", 1);
  OK(ordo_init());
  ordo_platform_t platform;
  OK(ordo_platform_get(1, &platform)); /* 0 is the host backend, 1 CUDA */
  OK(ordo_device_get(platform, 0, &device));
  /* PyTorch's CUDA state (its caching allocator among it) made on device 0. */
  at::Tensor warm = at::empty({1}, at::TensorOptions().device(at::kCUDA, 0));
  warm.reset();

  ordo_queue_t q;
  OK(ordo_queue_create(device, &q));
  void *native = nullptr;
  OK(ordo_queue_native(q, &native));
  cudaStream_t s = (cudaStream_t)native;
  auto torch_pairs = [&]() {
    double t0 = now_ns();
    for (int i = 0; i < PAIRS; i++) torch_free(torch_alloc(SIZE, s));
    double ns = (now_ns() - t0) / PAIRS;
    OK(ordo_queue_synchronize(q));
    return ns;
  };
  auto ordo_pairs = [&]() {
    double t0 = now_ns();
    for (int i = 0; i < PAIRS; i++) OK(ordo_mem_free_async(q, ordo_alloc(SIZE, q)));
    double ns = (now_ns() - t0) / PAIRS;
    OK(ordo_queue_synchronize(q));
    return ns;
  };
  torch_pairs();
  ordo_pairs();
  std::printf("| workload | PyTorch | ordo | ratio | target |\n|---|---|---|---|---|\n");
  abba("1 MiB allocate + free in a loop, one stream", "ns per pair", torch_pairs, ordo_pairs);

  std::vector<ordo_queue_t> queues(THREADS);
  std::vector<cudaStream_t> streams(THREADS);
  for (int i = 0; i < THREADS; i++) {
    OK(ordo_queue_create(device, &queues[i]));
    OK(ordo_queue_native(queues[i], &native));
    streams[i] = (cudaStream_t)native;
  }
  auto round = [&](bool use_ordo) {
    std::vector<double> ns(THREADS);
    std::barrier start(THREADS);
    std::vector<std::thread> threads;
    for (int i = 0; i < THREADS; i++) {
      threads.emplace_back([&, i]() {
        c10::cuda::set_device(0);
        start.arrive_and_wait();
        ns[i] = mixed_steps(i, queues[i], streams[i], use_ordo);
      });
    }
    for (auto &t : threads) t.join();
    for (auto qi : queues) OK(ordo_queue_synchronize(qi));
    return *std::max_element(ns.begin(), ns.end());
  };
  round(true);
  round(false);
  abba("mixed workload, 8 threads, 6 buffers of 256 B to 64 MiB a step", "ns per step",
       [&]() { return round(false); }, [&]() { return round(true); });

  ordo_cache_stats_t stats;
  OK(ordo_device_cache_stats(device, &stats));
  std::printf("ordo's cache after the workloads: %llu bytes in %u blocks, %llu hits, %llu misses\n",
              (unsigned long long)stats.bytes, stats.blocks, (unsigned long long)stats.hits,
              (unsigned long long)stats.misses);
  for (auto qi : queues) OK(ordo_queue_destroy(qi));
  OK(ordo_queue_destroy(q));
  c10::cuda::CUDACachingAllocator::emptyCache();
  OK(ordo_shutdown());
  return 0;
}

// What every C++ peer of `index_vs_libs` shares: reading the workload directory that
// `index_vs_libs --workload-dir DIR` writes, the process clocks, the answer files and the
// result line. A peer is run as
//
//     PEER WORKDIR CONFIG REPS K IDS_OUT
//
// builds its index over WORKDIR/rects.f64 (one by one, or by its bulk loader), runs the
// windows of WORKDIR/windows.f64 REPS times and the kNN queries (K nearest of each point of
// WORKDIR/points.f64; none when K is 0) REPS times, writes every window's sorted ids to
// IDS_OUT and every kNN answer (nearest first) to IDS_OUT with the extension `.knn` (per
// query: a little-endian u64 count, then the u64 ids), and prints one JSON object in the
// shape of `spidx_bench::runs::RunResult`. `index_vs_libs` checks the answers against
// brute force and times it beside the Rust implementations, in turns.
#pragma once
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <sys/resource.h>

namespace peer {

struct Box {
  double min[2], max[2];
};
struct Pt {
  double x, y;
};

[[noreturn]] inline void die(const std::string& msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  std::exit(2);
}

inline std::vector<double> read_f64s(const std::string& path, size_t per) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) die(path + ": cannot open (write the workload with index_vs_libs --workload-dir)");
  std::vector<double> v;
  double buf[4096];
  size_t got;
  while ((got = std::fread(buf, sizeof(double), 4096, f)) > 0) v.insert(v.end(), buf, buf + got);
  std::fclose(f);
  if (v.size() % per != 0) die(path + ": size is not a multiple of " + std::to_string(per * 8) + " bytes");
  return v;
}

inline std::vector<Box> read_boxes(const std::string& path) {
  auto v = read_f64s(path, 4);
  std::vector<Box> out(v.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) out[i] = Box{{v[4 * i], v[4 * i + 1]}, {v[4 * i + 2], v[4 * i + 3]}};
  return out;
}

inline std::vector<Pt> read_points(const std::string& path) {
  auto v = read_f64s(path, 2);
  std::vector<Pt> out(v.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = Pt{v[2 * i], v[2 * i + 1]};
  return out;
}

inline double cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
inline double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline uint64_t status_kb(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t v = 0;
  size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, field, n) == 0 && line[n] == ':') v = std::strtoull(line + n + 1, nullptr, 10);
  std::fclose(f);
  return v;
}

/// Writes id lists in the format of `index_vs_libs`' answer files.
inline void write_lists(const std::string& path, const std::vector<std::vector<uint64_t>>& lists) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) die(path + ": cannot create");
  for (auto& l : lists) {
    uint64_t n = l.size();
    std::fwrite(&n, 8, 1, f);
    if (n) std::fwrite(l.data(), 8, n, f);
  }
  if (std::fclose(f) != 0) die(path + ": write failed");
}

inline std::string knn_path(const std::string& ids_out) {
  auto dot = ids_out.rfind('.');
  auto slash = ids_out.rfind('/');
  std::string stem = (dot != std::string::npos && (slash == std::string::npos || dot > slash)) ? ids_out.substr(0, dot) : ids_out;
  return stem + ".knn";
}

/// The command line of a peer.
struct Args {
  std::string dir, config, ids_out;
  int reps = 1;
  size_t k = 0;
};

inline Args parse(int argc, char** argv) {
  if (argc != 6) die(std::string("usage: ") + argv[0] + " WORKDIR CONFIG REPS K IDS_OUT");
  Args a;
  a.dir = argv[1];
  a.config = argv[2];
  a.reps = std::atoi(argv[3]);
  a.k = std::strtoull(argv[4], nullptr, 10);
  a.ids_out = argv[5];
  if (a.reps < 1) die("REPS must be at least 1");
  return a;
}

inline std::string list(const std::vector<double>& v) {
  std::string s = "[";
  char b[40];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(b, sizeof b, "%s%.9f", i ? "," : "", v[i]);
    s += b;
  }
  return s + "]";
}

/// What one run measured, printed as `RunResult` JSON.
struct Result {
  std::string name, label;
  size_t n = 0, queries = 0, knn_queries = 0;
  double insert_wall_s = 0, insert_cpu_s = 0;
  std::vector<double> query_wall_s, query_cpu_s, knn_wall_s, knn_cpu_s;
  uint64_t results = 0, rss_base_kb = 0;

  void print() const {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    std::printf(
        "{\"name\":\"%s\",\"label\":\"%s\",\"device\":\"-\",\"cache\":\"-\",\"n\":%zu,\"queries\":%zu,"
        "\"insert_wall_s\":%.9f,\"insert_cpu_s\":%.9f,\"query_wall_s\":%s,\"query_cpu_s\":%s,"
        "\"results\":%" PRIu64 ",\"rss_base_kb\":%" PRIu64 ",\"peak_rss_kb\":%" PRIu64 ",\"maxrss_kb\":%ld,"
        "\"insert_io\":null,\"query_io\":null,\"tree\":null,\"knn_queries\":%zu,\"knn_wall_s\":%s,\"knn_cpu_s\":%s}\n",
        name.c_str(), label.c_str(), n, queries, insert_wall_s, insert_cpu_s, list(query_wall_s).c_str(),
        list(query_cpu_s).c_str(), results, rss_base_kb, status_kb("VmHWM"), ru.ru_maxrss, knn_queries,
        list(knn_wall_s).c_str(), list(knn_cpu_s).c_str());
  }
};

/// Runs the measured phases over an index type `Index` with
///   build(boxes)                         the timed build,
///   count(box) -> uint64_t               one window's results, counted,
///   ids(box, std::vector<uint64_t>&)     one window's ids (untimed),
///   knn(pt, k, std::vector<uint64_t>&)   the k nearest ids, nearest first.
template <class Index>
int run(const Args& a, Index& ix, Result& r) {
  auto boxes = read_boxes(a.dir + "/rects.f64");
  auto wins = read_boxes(a.dir + "/windows.f64");
  auto pts = read_points(a.dir + "/points.f64");
  r.n = boxes.size();
  r.queries = wins.size();
  r.rss_base_kb = status_kb("VmRSS");
  double w0 = wall_s(), c0 = cpu_s();
  ix.build(boxes);
  r.insert_wall_s = wall_s() - w0;
  r.insert_cpu_s = cpu_s() - c0;
  for (int rep = 0; rep < a.reps; ++rep) {
    uint64_t count = 0;
    w0 = wall_s();
    c0 = cpu_s();
    for (auto& w : wins) count += ix.count(w);
    r.query_wall_s.push_back(wall_s() - w0);
    r.query_cpu_s.push_back(cpu_s() - c0);
    r.results = count;
  }
  std::vector<uint64_t> hits;
  if (a.k > 0 && !pts.empty()) {
    r.knn_queries = pts.size();
    uint64_t mix = 0;
    for (int rep = 0; rep < a.reps; ++rep) {
      w0 = wall_s();
      c0 = cpu_s();
      for (auto& p : pts) {
        hits.clear();
        ix.knn(p, a.k, hits);
        for (auto h : hits) mix += h;
      }
      r.knn_wall_s.push_back(wall_s() - w0);
      r.knn_cpu_s.push_back(cpu_s() - c0);
    }
    if (mix == 1) std::fprintf(stderr, " ");  // keeps the loop's work observable
  }
  // Untimed: the answers for the cross-check.
  std::vector<std::vector<uint64_t>> lists;
  lists.reserve(wins.size());
  for (auto& w : wins) {
    hits.clear();
    ix.ids(w, hits);
    std::sort(hits.begin(), hits.end());
    lists.push_back(hits);
  }
  write_lists(a.ids_out, lists);
  if (r.knn_queries > 0) {
    lists.clear();
    for (auto& p : pts) {
      hits.clear();
      ix.knn(p, a.k, hits);
      lists.push_back(hits);
    }
    write_lists(knn_path(a.ids_out), lists);
  }
  r.print();
  return 0;
}

}  // namespace peer

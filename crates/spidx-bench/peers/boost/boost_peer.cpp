// Boost.Geometry's `rtree` as a peer of `index_vs_libs` (see ../common.hpp for the protocol).
// CONFIG: linear100, quadratic100, rstar100 or rstar16 (one-by-one inserts with that
// insertion strategy and node capacity; Boost's default minimum of 30 % of the maximum), or
// pack100 (the packing constructor, the `linear<100>` parameters); linear102, quadratic102,
// rstar102 and pack102: the same with at most 102 and at least 51 entries a node, the
// capacity of a spidx 4 KB `checked` page in 2-D and spidx's default minimum (50 %).
//
// Built by scripts/build-peers: g++ -std=c++17 -O3 -march=native -DNDEBUG boost_peer.cpp
#define BOOST_ALLOW_DEPRECATED_HEADERS
#include <boost/geometry.hpp>
#include <boost/geometry/index/rtree.hpp>
#include <boost/version.hpp>

#include <iterator>

#include "../common.hpp"

namespace bg = boost::geometry;
namespace bgi = boost::geometry::index;
using P = bg::model::point<double, 2, bg::cs::cartesian>;
using B = bg::model::box<P>;
using V = std::pair<B, uint64_t>;

static B to_box(const peer::Box& b) { return B(P(b.min[0], b.min[1]), P(b.max[0], b.max[1])); }

template <class Params>
struct Boost {
  bool pack = false;
  bgi::rtree<V, Params> t;
  std::vector<V> nn;

  void build(const std::vector<peer::Box>& boxes) {
    if (pack) {
      std::vector<V> vals;
      vals.reserve(boxes.size());
      for (size_t i = 0; i < boxes.size(); ++i) vals.emplace_back(to_box(boxes[i]), i);
      t = bgi::rtree<V, Params>(vals.begin(), vals.end());
    } else {
      for (size_t i = 0; i < boxes.size(); ++i) t.insert(V(to_box(boxes[i]), i));
    }
  }
  uint64_t count(const peer::Box& w) {
    uint64_t c = 0;
    for (auto it = t.qbegin(bgi::intersects(to_box(w))); it != t.qend(); ++it) ++c;
    return c;
  }
  void ids(const peer::Box& w, std::vector<uint64_t>& out) {
    for (auto it = t.qbegin(bgi::intersects(to_box(w))); it != t.qend(); ++it) out.push_back(it->second);
  }
  void knn(const peer::Pt& p, size_t k, std::vector<uint64_t>& out) {
    // The query's output comes sorted by Boost's own rule; order it nearest first.
    nn.clear();
    P q(p.x, p.y);
    t.query(bgi::nearest(q, static_cast<unsigned>(k)), std::back_inserter(nn));
    std::vector<std::pair<double, uint64_t>> d;
    d.reserve(nn.size());
    for (auto& v : nn) d.emplace_back(bg::comparable_distance(q, v.first), v.second);
    std::sort(d.begin(), d.end());
    for (auto& x : d) out.push_back(x.second);
  }
};

template <class Params>
static int go(const peer::Args& a, bool pack, const char* what) {
  Boost<Params> ix;
  ix.pack = pack;
  peer::Result r;
  r.name = "boost-" + a.config;
  char label[160];
  std::snprintf(label, sizeof label, "Boost.Geometry %d.%d rtree, %s (in memory)", BOOST_VERSION / 100000,
                BOOST_VERSION / 100 % 1000, what);
  r.label = label;
  return peer::run(a, ix, r);
}

int main(int argc, char** argv) {
  auto a = peer::parse(argc, argv);
  if (a.config == "linear100") return go<bgi::linear<100>>(a, false, "linear<100>, one-by-one inserts");
  if (a.config == "quadratic100") return go<bgi::quadratic<100>>(a, false, "quadratic<100>, one-by-one inserts");
  if (a.config == "rstar100") return go<bgi::rstar<100>>(a, false, "rstar<100>, one-by-one inserts");
  if (a.config == "rstar16") return go<bgi::rstar<16>>(a, false, "rstar<16>, one-by-one inserts");
  if (a.config == "pack100") return go<bgi::linear<100>>(a, true, "packing constructor, linear<100>");
  if (a.config == "linear102") return go<bgi::linear<102, 51>>(a, false, "linear<102, 51>, one-by-one inserts");
  if (a.config == "quadratic102")
    return go<bgi::quadratic<102, 51>>(a, false, "quadratic<102, 51>, one-by-one inserts");
  if (a.config == "rstar102") return go<bgi::rstar<102, 51>>(a, false, "rstar<102, 51>, one-by-one inserts");
  if (a.config == "pack102") return go<bgi::linear<102, 51>>(a, true, "packing constructor, linear<102, 51>");
  peer::die("unknown CONFIG '" + a.config +
            "' (linear100, quadratic100, rstar100, rstar16, pack100, linear102, quadratic102, rstar102, pack102)");
}

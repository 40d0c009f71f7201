// libspatialindex's R-tree as a peer of `index_vs_libs` (see ../common.hpp for the protocol).
// CONFIG: linear100, quadratic100 or rstar100 (one-by-one inserts with that variant, index
// and leaf capacity 100, fill factor 0.5: the minimum occupancy of spidx's default), or
// str100 (libspatialindex's STR bulk load, R*-tree variant, capacity 100, fill factor 0.99:
// the largest it accepts). Nodes live in its memory storage manager (serialised byte arrays,
// as its disk storage manager would hold them: a paged format, like spidx's).
//
// Built by scripts/build-peers: g++ -std=c++17 -O3 -march=native -DNDEBUG lsi_peer.cpp -lspatialindex
#include <spatialindex/SpatialIndex.h>

#include <memory>

#include "../common.hpp"

namespace si = SpatialIndex;

struct Count : si::IVisitor {
  uint64_t n = 0;
  void visitNode(const si::INode&) override {}
  void visitData(const si::IData&) override { ++n; }
  void visitData(std::vector<const si::IData*>& v) override { n += v.size(); }
};

struct Ids : si::IVisitor {
  std::vector<uint64_t>* out = nullptr;
  size_t limit = SIZE_MAX;
  void visitNode(const si::INode&) override {}
  void visitData(const si::IData& d) override {
    // Its kNN query also reports the entries tied with the k-th: keep the first k.
    if (out->size() < limit) out->push_back(static_cast<uint64_t>(d.getIdentifier()));
  }
  void visitData(std::vector<const si::IData*>& v) override {
    for (auto* d : v) visitData(*d);
  }
};

struct Stream : si::IDataStream {
  const std::vector<peer::Box>* boxes;
  size_t i = 0;
  explicit Stream(const std::vector<peer::Box>& b) : boxes(&b) {}
  si::IData* getNext() override {
    if (i >= boxes->size()) return nullptr;
    const peer::Box& b = (*boxes)[i];
    si::Region r(b.min, b.max, 2);
    auto* d = new si::RTree::Data(0, nullptr, r, static_cast<si::id_type>(i));
    ++i;
    return d;
  }
  bool hasNext() override { return i < boxes->size(); }
  uint32_t size() override { return static_cast<uint32_t>(boxes->size()); }
  void rewind() override { i = 0; }
};

struct Lsi {
  si::RTree::RTreeVariant variant = si::RTree::RV_LINEAR;
  bool bulk = false;
  std::unique_ptr<si::IStorageManager> sm;
  std::unique_ptr<si::ISpatialIndex> t;

  void build(const std::vector<peer::Box>& boxes) {
    sm.reset(si::StorageManager::createNewMemoryStorageManager());
    si::id_type root;
    if (bulk) {
      Stream s(boxes);
      t.reset(si::RTree::createAndBulkLoadNewRTree(si::RTree::BLM_STR, s, *sm, 0.99, 100, 100, 2, variant, root));
    } else {
      t.reset(si::RTree::createNewRTree(*sm, 0.5, 100, 100, 2, variant, root));
      for (size_t i = 0; i < boxes.size(); ++i) {
        si::Region r(boxes[i].min, boxes[i].max, 2);
        t->insertData(0, nullptr, r, static_cast<si::id_type>(i));
      }
    }
  }
  uint64_t count(const peer::Box& w) {
    Count c;
    si::Region r(w.min, w.max, 2);
    t->intersectsWithQuery(r, c);
    return c.n;
  }
  void ids(const peer::Box& w, std::vector<uint64_t>& out) {
    Ids v;
    v.out = &out;
    si::Region r(w.min, w.max, 2);
    t->intersectsWithQuery(r, v);
  }
  void knn(const peer::Pt& p, size_t k, std::vector<uint64_t>& out) {
    Ids v;
    v.out = &out;
    v.limit = k;
    double c[2] = {p.x, p.y};
    si::Point q(c, 2);
    t->nearestNeighborQuery(static_cast<uint32_t>(k), q, v);
  }
};

int main(int argc, char** argv) {
  auto a = peer::parse(argc, argv);
  Lsi ix;
  std::string what;
  if (a.config == "linear100") {
    ix.variant = si::RTree::RV_LINEAR;
    what = "linear, capacity 100, one-by-one inserts";
  } else if (a.config == "quadratic100") {
    ix.variant = si::RTree::RV_QUADRATIC;
    what = "quadratic, capacity 100, one-by-one inserts";
  } else if (a.config == "rstar100") {
    ix.variant = si::RTree::RV_RSTAR;
    what = "R*-tree, capacity 100, one-by-one inserts";
  } else if (a.config == "str100") {
    ix.variant = si::RTree::RV_RSTAR;
    ix.bulk = true;
    what = "STR bulk load, capacity 100, fill 0.99";
  } else {
    peer::die("unknown CONFIG '" + a.config + "' (linear100, quadratic100, rstar100, str100)");
  }
  peer::Result r;
  r.name = "lsi-" + a.config;
  r.label = "libspatialindex " + std::string(SIDX_RELEASE_NAME) + " RTree, " + what + " (memory storage manager)";
  return peer::run(a, ix, r);
}

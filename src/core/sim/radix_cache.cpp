#include "core/sim/radix_cache.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/sim/invariant.hpp"

namespace kvplan {

namespace {

std::uint64_t fmix(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Walks a request's segments: which one holds token `pos`, and where it ends.
struct SegmentCursor {
    const std::vector<Segment>& segs;
    std::size_t i = 0;
    std::int64_t start = 0;
    // False past the last segment.
    bool seek(std::int64_t pos) {
        while (i < segs.size() && pos >= start + segs[i].tokens) start += segs[i++].tokens;
        return i < segs.size();
    }
    std::int64_t end() const { return start + segs[i].tokens; }
};

}  // namespace

std::uint64_t mix_keys(std::uint64_t a, std::uint64_t b) {
    return fmix(fmix(a) ^ (b + 0x9e3779b97f4a7c15ULL));
}

RadixCache::RadixCache() {
    Node root;
    root.alive = true;
    nodes_.push_back(root);
}

std::uint64_t RadixCache::token_id(std::uint64_t seg_key, std::int64_t offset) {
    return mix_keys(seg_key, static_cast<std::uint64_t>(offset));
}

std::uint64_t RadixCache::edge(NodeId parent, std::uint64_t id) const {
    return mix_keys(static_cast<std::uint64_t>(parent) + 0x51ed27ULL, id);
}

RadixCache::NodeId RadixCache::child(NodeId parent, std::uint64_t id) const {
    auto it = edges_.find(edge(parent, id));
    if (it == edges_.end()) return -1;
    const Node& n = at(it->second);
    return n.parent == parent && n.id == id ? it->second : -1;
}

RadixCache::NodeId RadixCache::add_node(NodeId parent, std::uint64_t seg_key, std::int64_t offset, std::int64_t tokens) {
    NodeId id;
    if (!free_ids_.empty()) {
        id = free_ids_.back();
        free_ids_.pop_back();
    } else {
        id = static_cast<NodeId>(nodes_.size());
        nodes_.emplace_back();
    }
    Node& n = at(id);
    n = Node{};
    n.parent = parent;
    n.seg_key = seg_key;
    n.offset = offset;
    n.id = token_id(seg_key, offset);
    n.tokens = tokens;
    n.depth = at(parent).depth + tokens;
    n.alive = true;
    n.last_access = clock_;
    if (!edges_.emplace(edge(parent, n.id), id).second) throw std::logic_error("radix cache: two children with one key");
    leaf_out(parent);  // no longer a leaf
    at(parent).children += 1;
    total_ += tokens;
    evictable_ += tokens;
    leaf_in(id);
    return id;
}

// _split_node: `node` keeps its first `keep` tokens; the rest moves to a new
// child that takes over its children, locks and access time.
RadixCache::NodeId RadixCache::split(NodeId node, std::int64_t keep) {
    Node& n = at(node);
    if (keep <= 0 || keep >= n.tokens) throw std::logic_error("radix cache: split outside the node");
    const std::int64_t rest = n.tokens - keep;
    leaf_out(node);
    // The lower part: re-point the node's children at it by moving the node
    // itself down (its id changes) and putting a new upper node in its place.
    edges_.erase(edge(n.parent, n.id));
    const NodeId parent = n.parent;
    const std::uint64_t seg_key = n.seg_key;
    const std::int64_t offset = n.offset, lock = n.lock_ref, access = n.last_access;
    // add_node counts the new node's tokens again, as unlocked: undo that,
    // the split moves tokens without adding any.
    const NodeId upper = add_node(parent, seg_key, offset, keep);
    at(parent).children -= 1;  // add_node counted the upper node; `node` left the parent
    total_ -= keep;
    evictable_ -= keep;
    leaf_out(upper);
    Node& u = at(upper);
    Node& lower = at(node);  // add_node may have reallocated nodes_
    u.lock_ref = lock;
    u.last_access = access;
    u.children = 1;
    lower.parent = upper;
    lower.offset = offset + keep;
    lower.id = token_id(seg_key, lower.offset);
    lower.tokens = rest;
    edges_.emplace(edge(upper, lower.id), node);
    leaf_in(node);
    return upper;
}

void RadixCache::touch(NodeId node) {
    leaf_out(node);
    at(node).last_access = clock_;
    leaf_in(node);
}

void RadixCache::leaf_in(NodeId node) {
    if (evictable_leaf(at(node))) leaves_.insert({at(node).last_access, node});
}

void RadixCache::leaf_out(NodeId node) {
    leaves_.erase({at(node).last_access, node});
}

RadixCache::Match RadixCache::match(const std::vector<Segment>& segments, std::int64_t limit) {
    ++clock_;
    SegmentCursor cur{segments};
    Match m;
    while (m.tokens < limit && cur.seek(m.tokens)) {
        NodeId c = child(m.node, token_id(segments[cur.i].key, m.tokens - cur.start));
        if (c < 0) break;
        const std::int64_t usable = std::min({at(c).tokens, limit - m.tokens, cur.end() - m.tokens});
        if (usable < at(c).tokens) c = split(c, usable);
        touch(c);
        m.tokens += usable;
        m.node = c;
    }
    return m;
}

RadixCache::NodeId RadixCache::insert(const std::vector<Segment>& segments, std::int64_t upto) {
    ++clock_;
    SegmentCursor cur{segments};
    NodeId node = kRoot;
    std::int64_t pos = 0;
    while (pos < upto) {
        if (!cur.seek(pos)) throw std::logic_error("radix cache: insert past the request's tokens");
        const std::uint64_t key = segments[cur.i].key;
        const std::int64_t run = std::min(upto, cur.end()) - pos;
        NodeId c = child(node, token_id(key, pos - cur.start));
        if (c < 0) {
            c = add_node(node, key, pos - cur.start, run);
        } else {
            if (at(c).tokens > run) c = split(c, run);
            touch(c);
        }
        pos += at(c).tokens;
        node = c;
    }
    return node;
}

void RadixCache::lock(NodeId node) {
    for (NodeId n = node; n != kRoot; n = at(n).parent) {
        if (at(n).lock_ref == 0) {
            leaf_out(n);
            evictable_ -= at(n).tokens;
        }
        at(n).lock_ref += 1;
    }
}

void RadixCache::unlock(NodeId node) {
    for (NodeId n = node; n != kRoot; n = at(n).parent) {
        if (at(n).lock_ref <= 0) throw std::logic_error("radix cache: unlock without a lock");
        at(n).lock_ref -= 1;
        if (at(n).lock_ref == 0) {
            evictable_ += at(n).tokens;
            leaf_in(n);
        }
    }
}

std::int64_t RadixCache::evict(std::int64_t tokens) {
    std::int64_t freed = 0;
    while (freed < tokens && !leaves_.empty()) {
        const NodeId id = leaves_.begin()->second;
        leaves_.erase(leaves_.begin());
        Node& n = at(id);
        freed += n.tokens;
        total_ -= n.tokens;
        evictable_ -= n.tokens;
        edges_.erase(edge(n.parent, n.id));
        const NodeId parent = n.parent;
        n.alive = false;
        free_ids_.push_back(id);
        at(parent).children -= 1;
        leaf_in(parent);
    }
    return freed;
}

// One pass over the nodes, one over the edge map and one over the leaf set,
// with scratch vectors kept between calls: the same checks as looking up
// every node's edge and leaf entry, without a hash or set lookup per node
// (the lookups and a fresh vector each pass were half of fuzz_trace's time
// on its larger inputs). The edge map holds one entry per live node but the
// root, each keyed by that node's (parent, first token), no node twice; the
// leaf set one entry per evictable leaf, by its last access, no node twice.
KVPLAN_INVARIANT_WALK bool RadixCache::consistent() const {
    const auto size = static_cast<NodeId>(nodes_.size());
    std::int64_t total = 0, evictable = 0, leaves = 0, live = 0;
    std::vector<std::int64_t>& children = walk_children_;
    std::vector<char>& seen = walk_seen_;
    children.assign(nodes_.size(), 0);
    for (NodeId i = 1; i < size; ++i) {
        const Node& n = nodes_[static_cast<std::size_t>(i)];
        if (!n.alive) continue;
        if (n.parent < 0 || n.parent >= size) return false;
        const Node& p = nodes_[static_cast<std::size_t>(n.parent)];
        if (!p.alive || n.depth != p.depth + n.tokens || n.tokens <= 0) return false;
        if (p.parent >= 0 && p.lock_ref < n.lock_ref) return false;  // a lock covers the whole path
        children[static_cast<std::size_t>(n.parent)] += 1;
        total += n.tokens;
        if (n.lock_ref == 0) evictable += n.tokens;
        ++live;
    }
    seen.assign(nodes_.size(), 0);
    for (const auto& [key, id] : edges_) {
        if (id <= 0 || id >= size) return false;
        const Node& n = nodes_[static_cast<std::size_t>(id)];
        if (!n.alive || seen[static_cast<std::size_t>(id)] || edge(n.parent, n.id) != key) return false;
        seen[static_cast<std::size_t>(id)] = 1;
    }
    for (NodeId i = 0; i < size; ++i) {
        const Node& n = nodes_[static_cast<std::size_t>(i)];
        if (n.alive && children[static_cast<std::size_t>(i)] != n.children) return false;
        if (evictable_leaf(n)) ++leaves;
    }
    seen.assign(nodes_.size(), 0);
    for (const auto& [access, id] : leaves_) {
        if (id < 0 || id >= size) return false;
        const Node& n = nodes_[static_cast<std::size_t>(id)];
        if (!evictable_leaf(n) || n.last_access != access || seen[static_cast<std::size_t>(id)]) return false;
        seen[static_cast<std::size_t>(id)] = 1;
    }
    return total == total_ && evictable == evictable_ && leaves == static_cast<std::int64_t>(leaves_.size()) &&
           static_cast<std::int64_t>(edges_.size()) == live && live == static_cast<std::int64_t>(nodes_.size() - 1 - free_ids_.size());
}

}  // namespace kvplan

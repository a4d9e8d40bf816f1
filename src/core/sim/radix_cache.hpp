// SGLang's radix prefix cache over a token pool of page size 1
// (python/sglang/srt/mem_cache/radix_cache.py, RadixCache):
//   - a tree whose edges hold runs of tokens; a request's prompt matches the
//     longest path whose tokens equal its own, to the token (match_prefix,
//     splitting a node where the match ends inside it, _split_node);
//   - a request that runs holds a lock on its path (inc_lock_ref /
//     dec_lock_ref): locked nodes are "protected", the others "evictable";
//   - evict(n) frees unlocked leaves, least recently used first (the
//     default eviction policy, last_access_time), until n tokens are freed,
//     a parent that becomes an unlocked leaf joining the candidates.
// Token content is known here as runs ("segments"): a run of tokens equal
// across requests (a Mooncake hash_id block) has a shared key; a request's
// own tokens have a key no other request has. Two tokens are equal when
// their segments' keys and their offsets in them are. Time is a counter of
// calls (match, insert), enough to order accesses.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvplan {

// Combines two 64-bit keys: splitmix64's finalizer (a bijection) on each
// side, so that, for either argument fixed, distinct others give distinct
// results, and pairs of small integers (hash ids, lengths, offsets) do not
// collide as with a plain shift-and-xor combine.
std::uint64_t mix_keys(std::uint64_t a, std::uint64_t b);

struct Segment {
    std::uint64_t key = 0;
    std::int64_t tokens = 0;
};

class RadixCache {
public:
    using NodeId = std::int64_t;
    static constexpr NodeId kRoot = 0;

    RadixCache();

    struct Match {
        std::int64_t tokens = 0;  // leading tokens found in the cache
        NodeId node = kRoot;      // the node that ends exactly there
    };
    // The longest cached prefix of `segments`, at most `limit` tokens; the
    // nodes on it count as accessed now.
    Match match(const std::vector<Segment>& segments, std::int64_t limit);
    // Adds the first `upto` tokens of `segments` (those not cached yet
    // become new nodes) and returns the node that ends at `upto`.
    NodeId insert(const std::vector<Segment>& segments, std::int64_t upto);

    void lock(NodeId node);  // on the path from `node` to the root
    void unlock(NodeId node);
    // Frees unlocked leaves, oldest access first, until at least `tokens`
    // are freed or none is left; returns the tokens freed.
    std::int64_t evict(std::int64_t tokens);

    std::int64_t total_tokens() const { return total_; }
    std::int64_t evictable_tokens() const { return evictable_; }
    std::int64_t protected_tokens() const { return total_ - evictable_; }
    std::int64_t depth(NodeId node) const { return nodes_[static_cast<std::size_t>(node)].depth; }
    // Recounts totals, locks, leaves and edges from the nodes (tests).
    bool consistent() const;

private:
    struct Node {
        NodeId parent = -1;
        std::uint64_t id = 0;       // content of its first token: segment key x offset
        std::uint64_t seg_key = 0;  // the segment it lies in
        std::int64_t offset = 0;    // of its first token in that segment
        std::int64_t tokens = 0;
        std::int64_t depth = 0;  // tokens from the root to its end
        std::int64_t lock_ref = 0;
        std::int64_t children = 0;
        std::int64_t last_access = 0;
        bool alive = false;
    };

    static std::uint64_t token_id(std::uint64_t seg_key, std::int64_t offset);
    std::uint64_t edge(NodeId parent, std::uint64_t id) const;
    NodeId child(NodeId parent, std::uint64_t id) const;
    NodeId add_node(NodeId parent, std::uint64_t seg_key, std::int64_t offset, std::int64_t tokens);
    NodeId split(NodeId node, std::int64_t keep);
    void touch(NodeId node);
    bool evictable_leaf(const Node& n) const { return n.alive && n.lock_ref == 0 && n.children == 0 && n.parent >= 0; }
    void leaf_in(NodeId node);
    void leaf_out(NodeId node);
    Node& at(NodeId n) { return nodes_[static_cast<std::size_t>(n)]; }
    const Node& at(NodeId n) const { return nodes_[static_cast<std::size_t>(n)]; }

    std::vector<Node> nodes_;
    std::vector<NodeId> free_ids_;
    std::unordered_map<std::uint64_t, NodeId> edges_;   // (parent, first token's id) -> child
    std::set<std::pair<std::int64_t, NodeId>> leaves_;  // evictable leaves by (last access, id)
    std::int64_t total_ = 0, evictable_ = 0;
    std::int64_t clock_ = 0;
    // consistent()'s scratch, kept between calls (no allocation a pass).
    mutable std::vector<std::int64_t> walk_children_;
    mutable std::vector<char> walk_seen_;
};

}  // namespace kvplan

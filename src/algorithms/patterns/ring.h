#pragma once
// Ring rank maths: neighbours and which chunk a rank handles at each step. Pure and
// constexpr; shared by the ring algorithms of every collective.
//
// In a ring of n ranks, data moves one hop per step from rank r to rank r+1. A chunk that
// starts on rank s is on rank s+t after t steps, so at step t rank r handles the chunk that
// started on rank r-t: `chunkAt(r, n, t)`. The all-gather ring forwards chunk r-t at step t
// (it starts with its own chunk); the reduce-scatter ring starts one chunk earlier, with
// chunk r-1, so that the last chunk to arrive on rank r after n-1 hops is chunk r itself.

namespace tutti::ring {

/// The rank data goes to: r+1 mod n. `size` >= 1, 0 <= rank < size.
constexpr int next(int rank, int size) { return (rank + 1) % size; }

/// The rank data comes from: r-1 mod n.
constexpr int prev(int rank, int size) { return (rank + size - 1) % size; }

/// The chunk on `rank` after it has travelled `hops` steps along the ring: (rank - hops)
/// mod size, for any hops >= 0.
constexpr int chunkAt(int rank, int size, int hops) {
  return ((rank - hops) % size + size) % size;
}

/// The chunk all-gather ring step t (0 <= t < n) handles on rank r: step 0 sends r's own
/// chunk; step t >= 1 receives chunk r-t, which rank r-1 handled at step t-1, and forwards
/// it unless t = n-1.
constexpr int allgatherChunk(int rank, int size, int step) { return chunkAt(rank, size, step); }

/// The chunk reduce-scatter ring step t (0 <= t < n) handles on rank r: step 0 sends r's
/// input of chunk r-1; step t >= 1 receives the partial result of chunk r-1-t from rank r-1
/// (its step t-1), adds r's input and forwards it, until at step n-1 the chunk is r's own
/// and complete.
constexpr int reduceScatterChunk(int rank, int size, int step) {
  return chunkAt(rank, size, step + 1);
}

}  // namespace tutti::ring

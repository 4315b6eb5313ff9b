/* eplb.h — DeepSeek's expert-parallelism load balancer (github deepseek-ai/EPLB: its README and
 * eplb.py): from a load per logical expert, which experts get redundant copies and on which EP rank
 * every physical expert slot sits. Pure functions; loads in any unit (token-expert pairs, or a share).
 *
 * ---- The algorithm (EPLB's README, "Algorithm"; eplb.py) -----------------------------------------
 *   replicate        (replicate_experts) each extra physical slot goes, one at a time, to the expert
 *                    with the largest load per copy, load / copies (ties: the lowest id).
 *   balanced packing (balanced_packing) items by decreasing weight, each onto the least loaded pack
 *                    (ties: the lowest) that still has a free place; every pack takes as many items.
 *   hierarchical     (rebalance_experts_hierarchical, the README's "Hierarchical Load Balancing", used
 *                    when the number of nodes divides the number of expert groups, one node included:
 *                    rebalance_experts' test is num_groups % num_nodes == 0): 1. pack the expert
 *                    groups (their summed loads) onto the nodes, groups / nodes per node; 2. within
 *                    each node, replicate its experts over its (E + R) / nodes physical slots; 3. pack
 *                    each node's physical experts (weight load / copies) onto its GPUs.
 *   global           (the README's "Global Load Balancing", every other case): replicate over all the
 *                    slots and pack the physical experts onto all the GPUs (hierarchical with one group
 *                    and one node).
 * EPLB asks that the physical slots divide evenly over the GPUs (and the nodes): R a multiple of the
 * EP size, which routing.eplb_interval_steps requires (scenario.c). EPLB's balanced packing does not
 * keep two copies of one expert off one GPU; neither does eplb_rebalance.
 *
 * The oracle of routing.redundant_experts (routing.h: the law's expected loads at every step, the
 * experts' own slots kept where they are, only the replicas packed) uses the same replicate and
 * packing functions, with its own rule's two additions: a cap on the copies (one per rank) and a pack
 * that prefers ranks not holding the expert yet.
 */
#ifndef MOESIM_EPLB_H
#define MOESIM_EPLB_H

/* EPLB's replicate: `extra` further copies over E experts of loads `load`, each to the expert with the
 * most load per copy (ties: the lowest id), at most max_copies copies per expert (0: no cap). count[e]
 * (out) = 1 + its replicas; created[k] (out, `extra` entries, NULL: not wanted) = the expert the k-th
 * extra copy went to. */
void eplb_replicate(const double *load, int E, int extra, int max_copies, int *count, int *created);

/* One item of a balanced packing. pack >= 0 on entry: already placed (its weight counts toward that
 * pack's load and its key is held there; it takes none of room[]); pack < 0: to place. On return every
 * item to place has its pack and pos, its order of arrival in the pack among the placed items. */
typedef struct {
    double w;
    int key;
    int pack, pos;
} eplb_item;

/* EPLB's balanced packing of the items to place: by decreasing weight (ties: the lower index in
 * items[]; EPLB's torch sort leaves ties unordered), each onto the least loaded pack (ties: the lowest)
 * with room left (room[p] places in pack p); EPLB's shortcut when every pack takes one item and none is
 * placed before: item i to pack i. avoid_key: a pack already holding an item of the same key is passed
 * over while a pack without it has room. Returns 0, or -1 when the items to place outnumber the room. */
int eplb_pack(eplb_item *items, int n_items, int n_packs, const int *room, int avoid_key);

/* EPLB's rebalance_experts for one EP group: n_ranks x slots_per_rank physical slots over E logical
 * experts (slots_per_rank x n_ranks >= E), the ranks of node k being k x n_ranks / n_nodes ..
 * (k + 1) x n_ranks / n_nodes - 1; n_groups expert groups of E / n_groups consecutive experts (1: no
 * groups). Hierarchical when n_groups % n_nodes == 0 (and, as EPLB asserts, E % n_groups == 0 and
 * n_ranks % n_nodes == 0); global otherwise. phys[rank x slots_per_rank + pos] (out) = the logical
 * expert of that slot. Returns 1 when it took the hierarchical policy over several nodes, 0 for global
 * (one node's hierarchical policy is the global one), -1 for a shape it cannot place (fewer slots
 * than experts). */
int eplb_rebalance(const double *load, int E, int n_groups, int n_nodes, int n_ranks, int slots_per_rank, int *phys);

/* The expert weights a rebalance moves between two placements of one EP group (phys arrays as
 * eplb_rebalance writes them): every slot of the new placement whose rank held no copy of its expert
 * before fetches it from a rank that did, the first such rank on its own node (NVLink) if there is one,
 * else the first one. moves[i x n_ranks + j] (out, n_ranks^2, zeroed here) counts the experts rank i
 * sends rank j. Returns the experts moved. */
int eplb_moves(const int *old_phys, const int *new_phys, int n_ranks, int slots_per_rank, const int *rank_node,
               int *moves);

/* The replicas' gradient sum of one placement: every expert whose copies sit on m >= 2 distinct ranks
 * all-reduces its gradient among them (copies on one rank add up locally), as a ring over those ranks
 * in ascending order, each sending 2 (m - 1) / m of grad_bytes to the next (NCCL's ring all-reduce:
 * a reduce-scatter and an all-gather, each (m - 1) / m of the buffer). bytes[i x n_ranks + j] (out,
 * n_ranks^2, zeroed here). Returns the experts that sync. */
int eplb_replica_sync_bytes(const int *phys, int n_ranks, int slots_per_rank, int E, double grad_bytes, double *bytes);

#endif

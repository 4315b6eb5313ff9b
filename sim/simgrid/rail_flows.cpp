/* rail_flows.cpp — one-sided transfers (s4u Comm::sendto_async) behind a C API. */
#include "sim/simgrid/rail_flows.h"
#include "sim/simgrid/rail_fabric.h"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>

#include <cmath>
#include <vector>

namespace sg4 = simgrid::s4u;

struct rail_xfer_s {
    std::vector<sg4::CommPtr> comms; /* its queue pairs' parts still in flight; empty: done */
};

static uint64_t to_bytes(double b) { return b > 0 ? (uint64_t)std::llround(b) : 0; }

/* Start one transfer as its queue pairs (rail_fabric_qps(): 1 unless the fabric hashes them onto
 * separate uplink ports): part q of b bytes, from queue pair q's sender, b / Q each and the remainder
 * on the first ones. */
static void send_parts(sg_host_t src, sg_host_t dst, uint64_t b, int qps, std::vector<sg4::CommPtr> &out) {
    if (b == 0) return;
    if (qps <= 1) {
        out.push_back(sg4::Comm::sendto_async(src, dst, b));
        return;
    }
    const uint64_t part = b / (uint64_t)qps, rest = b % (uint64_t)qps;
    for (int q = 0; q < qps; q++) {
        const uint64_t bq = part + ((uint64_t)q < rest ? 1 : 0);
        if (bq > 0) out.push_back(sg4::Comm::sendto_async(rail_fabric_qp_host(src, q), dst, bq));
    }
}

/* Where every run starts (rail_flows.h "Durations do not depend on when a run happens"): at or after
 * RAIL_FLOWS_EPOCH_S, on a multiple of RAIL_FLOWS_ALIGN_S. Both are powers of two, so the start and
 * the wait to it are exact in double precision. */
static double aligned_start(double now) {
    if (now < RAIL_FLOWS_EPOCH_S) return RAIL_FLOWS_EPOCH_S;
    return std::ceil(now / RAIL_FLOWS_ALIGN_S) * RAIL_FLOWS_ALIGN_S;
}

extern "C" double rail_flows_run(const rail_flow *flows, size_t n, double *finish_s) {
    if (n == 0) return 0.0;
    double makespan = 0.0;
    /* One driver actor issues every transfer at the same instant and waits for all of them; the
     * receivers need no actors (one-sided). Finish times are read from the activities afterwards. */
    sg4::Actor::create("rail-flows", flows[0].src, [flows, n, finish_s, &makespan]() {
        const double start = aligned_start(sg4::Engine::get_clock());
        if (start > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(start);
        const double t0 = sg4::Engine::get_clock();
        const int qps = rail_fabric_qps();
        std::vector<sg4::CommPtr> comms;
        std::vector<size_t> index;   /* the flow of each comm (a flow is its queue pairs' comms) */
        comms.reserve(n);
        for (size_t i = 0; i < n; i++) {
            if (finish_s) finish_s[i] = 0.0;
            send_parts(flows[i].src, flows[i].dst, to_bytes(flows[i].bytes), qps, comms);
            index.resize(comms.size(), i);
        }
        sg4::Comm::wait_all(comms);
        for (size_t k = 0; k < comms.size(); k++) {
            const double t = comms[k]->get_finish_time() - t0;
            if (finish_s && t > finish_s[index[k]]) finish_s[index[k]] = t;
            if (t > makespan) makespan = t;
        }
    });
    sg4::Engine::get_instance()->run();
    return makespan;
}

extern "C" rail_xfer rail_xfer_start(sg_host_t src, sg_host_t dst, double bytes) {
    auto *x = new rail_xfer_s;
    send_parts(src, dst, to_bytes(bytes), rail_fabric_qps(), x->comms);
    return x;
}

extern "C" void rail_xfer_wait(rail_xfer x) {
    if (!x) return;
    sg4::Comm::wait_all(x->comms);
    delete x;
}

extern "C" void rail_xfer_wait_all(rail_xfer *xs, size_t n) {
    std::vector<sg4::CommPtr> comms;
    for (size_t i = 0; i < n; i++)
        if (xs[i]) comms.insert(comms.end(), xs[i]->comms.begin(), xs[i]->comms.end());
    sg4::Comm::wait_all(comms);
    for (size_t i = 0; i < n; i++) delete xs[i];
}

extern "C" long rail_xfer_wait_any(rail_xfer *xs, size_t n) {
    for (;;) {
        std::vector<sg4::CommPtr> comms;
        std::vector<size_t> index;
        for (size_t i = 0; i < n; i++) {
            if (!xs[i]) continue;
            if (xs[i]->comms.empty()) { /* empty transfer, or its last part done: complete */
                delete xs[i];
                xs[i] = nullptr;
                return (long)i;
            }
            for (const sg4::CommPtr &c : xs[i]->comms) {
                comms.push_back(c);
                index.push_back(i);
            }
        }
        if (comms.empty()) return -1;
        /* one part done: drop it from its transfer, which completes with its last part */
        const ssize_t k = sg4::Comm::wait_any(comms);
        std::vector<sg4::CommPtr> &own = xs[index[(size_t)k]]->comms;
        for (size_t j = 0; j < own.size(); j++)
            if (own[j] == comms[(size_t)k]) {
                own.erase(own.begin() + (long)j);
                break;
            }
    }
}

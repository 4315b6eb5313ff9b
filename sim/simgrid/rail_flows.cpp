/* rail_flows.cpp — one-sided transfers (s4u Comm::sendto_async) behind a C API. */
#include "sim/simgrid/rail_flows.h"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>

#include <cmath>
#include <vector>

namespace sg4 = simgrid::s4u;

struct rail_xfer_s {
    sg4::CommPtr comm; /* null for an empty transfer */
};

static uint64_t to_bytes(double b) { return b > 0 ? (uint64_t)std::llround(b) : 0; }

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
        std::vector<sg4::CommPtr> comms;
        std::vector<size_t> index;
        comms.reserve(n);
        for (size_t i = 0; i < n; i++) {
            if (finish_s) finish_s[i] = 0.0;
            const uint64_t b = to_bytes(flows[i].bytes);
            if (b == 0) continue;
            comms.push_back(sg4::Comm::sendto_async(flows[i].src, flows[i].dst, b));
            index.push_back(i);
        }
        sg4::Comm::wait_all(comms);
        for (size_t k = 0; k < comms.size(); k++) {
            const double t = comms[k]->get_finish_time() - t0;
            if (finish_s) finish_s[index[k]] = t;
            if (t > makespan) makespan = t;
        }
    });
    sg4::Engine::get_instance()->run();
    return makespan;
}

extern "C" rail_xfer rail_xfer_start(sg_host_t src, sg_host_t dst, double bytes) {
    auto *x = new rail_xfer_s;
    const uint64_t b = to_bytes(bytes);
    if (b > 0) x->comm = sg4::Comm::sendto_async(src, dst, b);
    return x;
}

extern "C" void rail_xfer_wait(rail_xfer x) {
    if (!x) return;
    if (x->comm) x->comm->wait();
    delete x;
}

extern "C" void rail_xfer_wait_all(rail_xfer *xs, size_t n) {
    std::vector<sg4::CommPtr> comms;
    for (size_t i = 0; i < n; i++)
        if (xs[i] && xs[i]->comm) comms.push_back(xs[i]->comm);
    sg4::Comm::wait_all(comms);
    for (size_t i = 0; i < n; i++) delete xs[i];
}

extern "C" long rail_xfer_wait_any(rail_xfer *xs, size_t n) {
    std::vector<sg4::CommPtr> comms;
    std::vector<size_t> index;
    for (size_t i = 0; i < n; i++) {
        if (!xs[i]) continue;
        if (!xs[i]->comm) { /* empty transfer: complete already */
            delete xs[i];
            xs[i] = nullptr;
            return (long)i;
        }
        comms.push_back(xs[i]->comm);
        index.push_back(i);
    }
    if (comms.empty()) return -1;
    const ssize_t k = sg4::Comm::wait_any(comms);
    const size_t i = index[(size_t)k];
    delete xs[i];
    xs[i] = nullptr;
    return (long)i;
}

// SPDX-License-Identifier: MIT
/*
 * The queue-pair geometry a same-host peer claims in its REQ or REP decides how much of its
 * memfd we map. Every geometry our own queue pairs use is accepted; anything past the
 * limits is refused: ring sizes that are no power of two or above 65536, SGE counts out of
 * range, slot sizes out of range or not powers of two, slots beyond the budget our own
 * queue pairs keep (64 KiB slots for 65536 receives would be 4 GiB), arm slots past the
 * adapter's.
 */
#include <netdirect/netdirect.h>
#include "core/core.h"
#include "core/qp_int.h"
#include "transports/shm/shm.h"
#include "t_util.h"

static struct nd_cm_msg with(const struct shm_qp_desc *d)
{
    struct nd_cm_msg m;

    nd_cm_msg_init(&m, 0);
    shm_desc_put(&m, d);
    return m;
}

static struct shm_qp_desc desc(uint32_t rq_entries, uint32_t slot_size)
{
    return (struct shm_qp_desc){ .rq_entries = rq_entries, .max_sge = 4, .slot_size = slot_size };
}

static struct nd_cm_msg geometry(uint32_t rq_entries, uint32_t slot_size)
{
    struct shm_qp_desc d = desc(rq_entries, slot_size);

    return with(&d);
}

int main(void)
{
    struct nd_cm_msg m;

    for (uint32_t rq = 1; rq <= 65536; rq *= 2) {
        uint32_t slot = nd_qp_slot_size(rq);

        m = geometry(rq, slot);
        CHECK(shm_geometry_ok(&m));
        /* Smaller slots than ours are fine (an older or thriftier peer)... */
        if (slot > ND_SLOT_MIN) {
            m = geometry(rq, slot / 2);
            CHECK(shm_geometry_ok(&m));
        }
        /* ...larger ones only within the budget. */
        if (slot < ND_SLOT_MAX) {
            m = geometry(rq, slot * 2);
            CHECK(!shm_geometry_ok(&m));
        }
    }
    m = geometry(65536, ND_SLOT_MAX);
    CHECK(!shm_geometry_ok(&m));
    m = geometry(65536, ND_SLOT_MIN);          /* the floor: 16 MiB of slots, as ours */
    CHECK(shm_geometry_ok(&m));
    m = geometry(32, ND_SLOT_MAX);             /* 2 MiB exactly */
    CHECK(shm_geometry_ok(&m));
    m = geometry(0, ND_SLOT_MIN);
    CHECK(!shm_geometry_ok(&m));
    m = geometry(48, ND_SLOT_MIN);
    CHECK(!shm_geometry_ok(&m));
    m = geometry(131072, ND_SLOT_MIN);
    CHECK(!shm_geometry_ok(&m));
    m = geometry(16, ND_SLOT_MIN / 2);
    CHECK(!shm_geometry_ok(&m));
    m = geometry(16, 3000);
    CHECK(!shm_geometry_ok(&m));
    m = geometry(16, ND_SLOT_MAX * 2);
    CHECK(!shm_geometry_ok(&m));
    struct shm_qp_desc d = desc(16, 4096);
    d.max_sge = 0;
    m = with(&d);
    CHECK(!shm_geometry_ok(&m));
    d.max_sge = nd_caps.max_recv_sge + 1;
    m = with(&d);
    CHECK(!shm_geometry_ok(&m));
    d = desc(16, 4096);
    d.arm_slot = ND_MAX_CQS_PER_ADAPTER;
    m = with(&d);
    CHECK(!shm_geometry_ok(&m));
    d = desc(16, 4096);
    d.iarm_slot = ND_MAX_CQS_PER_ADAPTER;
    m = with(&d);
    CHECK(!shm_geometry_ok(&m));
    return 0;
}

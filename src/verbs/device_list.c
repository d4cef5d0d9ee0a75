// SPDX-License-Identifier: MIT
/* The device list: nd0 (device.c), its device tree brought up to date (devtree.c). */
#include "verbs_int.h"

#include <errno.h>
#include <stdlib.h>

VB_API struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list = calloc(2, sizeof(*list));

    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    list[0] = &vb_device_get()->dev;
    vb_devtree_refresh();
    if (num_devices)
        *num_devices = 1;
    return list;
}

VB_API void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SMSC LAN9118 Ethernet controller, as QEMU 7.2 models it on the
 * mps2-an500 (hw/arm/mps2.c: at 0xA0000000; hw/net/lan9118.c).
 */
#ifndef QEMU_DRV_LAN9118_H
#define QEMU_DRV_LAN9118_H

struct net_if;

/*
 * Resets the controller, initialises iface with the MAC address the
 * controller loaded from its EEPROM (QEMU's -nic ...,mac=), enables
 * receive and transmit, and starts the "eth_rx" thread that polls for
 * received frames every millisecond. Returns -1 when there is no LAN9118.
 */
int lan9118_init(struct net_if *iface);

#endif

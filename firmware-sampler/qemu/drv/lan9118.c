/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Driver of the SMSC LAN9118 Ethernet controller of QEMU's mps2-an500
 * (a LAN9220 on the real board), so that the demo's echo can be reached
 * from the host through QEMU's user-mode network
 * (-nic user,hostfwd=udp:127.0.0.1:PORT-:7): `tcmprof bench udp-echo`
 * against the emulated board.
 *
 * The controller has FIFOs, not descriptor rings: a frame is received by
 * popping its status word and reading its data words from the RX data
 * port, and sent by writing two command words and the data words to the TX
 * data port. Its interrupt line is not used: QEMU wires it to IRQ 13,
 * which the demo's vector table does not route, so a thread polls the RX
 * status FIFO every kernel tick instead (enough for the small rates an
 * emulated board answers). All register access is from cooperative
 * threads, so it needs no lock.
 */
#include <string.h>

#include "drv.h"
#include "kernel.h"
#include "lan9118.h"
#include "net.h"

#define LAN9118_BASE 0xA0000000u
#define REG(off) (*(volatile uint32_t *)(LAN9118_BASE + (off)))

#define RX_DATA REG(0x00)
#define TX_DATA REG(0x20)
#define RX_STATUS REG(0x40)
#define BYTE_TEST REG(0x64)
#define TX_CFG REG(0x70)
#define HW_CFG REG(0x74)
#define RX_FIFO_INF REG(0x7C)
#define TX_FIFO_INF REG(0x80)
#define MAC_CSR_CMD REG(0xA4)
#define MAC_CSR_DATA REG(0xA8)

#define BYTE_TEST_VALUE 0x87654321u /* reads the same in either byte order */
#define HW_CFG_SRST (1u << 0)
#define TX_CFG_TX_ON (1u << 1)
#define TX_CFG_TXSAO (1u << 2) /* let the TX status FIFO overrun: nobody reads it */
#define MAC_CSR_BUSY (1u << 31)
#define MAC_CSR_READ (1u << 30)
#define MAC_CR 1
#define MAC_ADDRH 2
#define MAC_ADDRL 3
#define MAC_CR_RXEN (1u << 2)
#define MAC_CR_TXEN (1u << 3)
#define MAC_CR_FDPX (1u << 20)
#define RX_STS_ERROR (1u << 15)
#define TX_CMD_A_FIRST (1u << 13)
#define TX_CMD_A_LAST (1u << 12)
#define FCS_LEN 4

static struct net_if *eth_iface;
static struct k_thread rx_thread;
static uint8_t rx_stack[1024] __attribute__((aligned(8)));

static uint32_t mac_csr_read(unsigned index)
{
	MAC_CSR_CMD = MAC_CSR_BUSY | MAC_CSR_READ | index;
	while (MAC_CSR_CMD & MAC_CSR_BUSY) {
	}
	return MAC_CSR_DATA;
}

static void mac_csr_write(unsigned index, uint32_t value)
{
	MAC_CSR_DATA = value;
	MAC_CSR_CMD = MAC_CSR_BUSY | index;
	while (MAC_CSR_CMD & MAC_CSR_BUSY) {
	}
}

static int lan9118_send(struct net_if *iface, struct net_buf *buf)
{
	const uint8_t *data = net_buf_data(buf);
	uint32_t len = buf->len;
	/* Two command words and the data rounded up to whole words. */
	if ((TX_FIFO_INF & 0xFFFFu) < 8u + ((len + 3u) & ~3u)) {
		iface->stats.tx_dropped++;
		return -1;
	}
	TX_DATA = TX_CMD_A_FIRST | TX_CMD_A_LAST | len;
	TX_DATA = (len << 16) | len; /* tag (unused) and packet length */
	for (uint32_t i = 0; i < len; i += 4) {
		uint32_t word = 0;
		memcpy(&word, data + i, len - i < 4 ? len - i : 4);
		TX_DATA = word;
	}
	return 0;
}

/* Takes one frame off the RX FIFOs into a network buffer, or drops it. */
static void receive_frame(void)
{
	uint32_t status = RX_STATUS;
	uint32_t len = (status >> 16) & 0x3FFFu; /* with the FCS */
	uint32_t words = (len + 3u) / 4u;
	struct net_buf *buf = NULL;
	if ((status & RX_STS_ERROR) == 0 && len >= ETH_HLEN + FCS_LEN &&
	    words * 4u <= NET_BUF_SIZE - NET_BUF_HEADROOM) {
		buf = net_buf_alloc(K_NO_WAIT);
	}
	uint8_t *dst = buf != NULL ? buf->data + NET_BUF_HEADROOM : NULL;
	for (uint32_t i = 0; i < words; i++) {
		uint32_t word = RX_DATA;
		if (dst != NULL) {
			memcpy(dst + 4u * i, &word, 4);
		}
	}
	if (buf == NULL) {
		eth_iface->stats.rx_dropped++;
		return;
	}
	buf->head = NET_BUF_HEADROOM;
	buf->len = (uint16_t)(len - FCS_LEN);
	net_recv_data(eth_iface, buf);
}

static void rx_main(void *arg)
{
	(void)arg;
	for (;;) {
		while (((RX_FIFO_INF >> 16) & 0xFFu) != 0) {
			receive_frame();
		}
		k_sleep_ms(1);
	}
}

int lan9118_init(struct net_if *iface)
{
	if (BYTE_TEST != BYTE_TEST_VALUE) {
		return -1;
	}
	HW_CFG = HW_CFG_SRST;
	while (HW_CFG & HW_CFG_SRST) {
	}
	uint32_t lo = mac_csr_read(MAC_ADDRL), hi = mac_csr_read(MAC_ADDRH);
	const uint8_t mac[6] = {lo, lo >> 8, lo >> 16, lo >> 24, hi, hi >> 8};
	net_if_init(iface, mac, lan9118_send);
	eth_iface = iface;
	TX_CFG = TX_CFG_TX_ON | TX_CFG_TXSAO;
	/* Not promiscuous (the reset value): own address and broadcast only. */
	mac_csr_write(MAC_CR, MAC_CR_RXEN | MAC_CR_TXEN | MAC_CR_FDPX);
	k_thread_create(&rx_thread, "eth_rx", rx_stack, sizeof(rx_stack), rx_main, NULL);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdint.h>
#include <zephyr/device.h>
typedef void (*uart_irq_callback_user_data_t)(const struct device *dev, void *user_data);
int uart_irq_callback_user_data_set(const struct device *dev, uart_irq_callback_user_data_t cb,
				    void *user_data);
void uart_irq_rx_enable(const struct device *dev);
void uart_irq_tx_enable(const struct device *dev);
void uart_irq_tx_disable(const struct device *dev);
int uart_irq_update(const struct device *dev);
int uart_irq_is_pending(const struct device *dev);
int uart_irq_rx_ready(const struct device *dev);
int uart_irq_tx_ready(const struct device *dev);
int uart_fifo_read(const struct device *dev, uint8_t *rx_data, const int size);
int uart_fifo_fill(const struct device *dev, const uint8_t *tx_data, int size);

package consumer

import "github.com/orderflow/orderflow/ingress/orders"

// ordersOnly decodes the order kind's events, as the topic took before other kinds.
var ordersOnly = NewDecoder(orders.New(nil, nil))

package consumer

import "github.com/orderflow/orderflow/ingress/intake"

// ordersOnly decodes the order kind's events, as the topic took before other kinds.
var ordersOnly = NewDecoder(intake.NewOrders(nil, nil))

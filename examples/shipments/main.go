// Command shipments is orderflow's API and worker with the shipment kind beside
// orders and refunds: `shipments api` serves, `shipments worker` runs the
// workflows; every command of orderflow's binaries comes with them.
package main

import (
	"os"

	"github.com/orderflow/orderflow"

	"example.com/shipments/shipment"
)

func main() { os.Exit(orderflow.Main(shipment.Kind{})) }

package client_test

import (
	"context"
	"errors"
	"log"
	"os"
	"time"

	"github.com/orderflow/orderflow/client"
)

func Example() {
	c, err := client.New(client.Options{BaseURL: "https://orders.example.com", APIKey: os.Getenv("ORDERFLOW_API_KEY")})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	// One key per logical order: the cart's own ID, so a job that starts over
	// after a crash places the same order, not a second one.
	placed, err := c.PlaceOrder(ctx, client.OrderRequest{
		CustomerID: "cus_42", Currency: "EUR", PaymentMethod: "pm_card_visa",
		Items: []client.Item{{SKU: "tea-500g", Quantity: 2, UnitAmount: 1250}},
	}, client.WithKey("cart-7f3a9c"), client.WithWait(10*time.Second))
	var p *client.Problem
	switch {
	case errors.As(err, &p) && p.Kind() == client.KindKeyReused:
		log.Fatalf("cart-7f3a9c was placed with another body: %v", p)
	case err != nil:
		log.Fatal(err) // a problem that is not retried, or the retry budget spent
	}
	log.Printf("order %s is %s (replayed: %t)", placed.ID, placed.Status, placed.Replayed)
	if placed.Status == client.PaymentActionRequired {
		o, _ := c.GetOrder(ctx, placed.ID)
		log.Printf("send the customer to %s", o.NextAction.RedirectURL)
	}
	// The customer's paid orders, newest first, page after page: the walk
	// ends at its first error, and a break asks for no further page.
	for o, err := range c.AllOrders(ctx, client.ListParams{CustomerID: "cus_42", Status: client.Paid}) {
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("%s: %d %s", o.ID, o.Amount, o.Currency)
	}
}

package client

import (
	"context"
	"fmt"
	"iter"
)

// AllOrders yields the tenant's orders that p filters, newest first, page after
// page from p.Cursor (empty: the first page), p.Limit orders a page (0: the
// API's default). Each page is one ListOrders call, retried like it; an error
// ends the sequence, yielded once with a zero Order. Breaking out of the loop
// makes no further request.
//
//	for o, err := range c.AllOrders(ctx, client.ListParams{Status: client.Paid}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(o.ID)
//	}
func (c *Client) AllOrders(ctx context.Context, p ListParams) iter.Seq2[Order, error] {
	return func(yield func(Order, error) bool) {
		walk(p.Cursor, func(cursor string) ([]Order, bool, string, error) {
			q := p
			q.Cursor = cursor
			page, err := c.ListOrders(ctx, q)
			if err != nil {
				return nil, false, "", err
			}
			return page.Data, page.HasMore, page.NextCursor, nil
		}, yield)
	}
}

// AllRefunds yields an order's refunds, newest first, page after page from
// p.Cursor, like AllOrders: an error ends the sequence, yielded once with a zero
// Refund; breaking out of the loop makes no further request.
func (c *Client) AllRefunds(ctx context.Context, orderID string, p RefundListParams) iter.Seq2[Refund, error] {
	return func(yield func(Refund, error) bool) {
		walk(p.Cursor, func(cursor string) ([]Refund, bool, string, error) {
			q := p
			q.Cursor = cursor
			page, err := c.ListRefunds(ctx, orderID, q)
			if err != nil {
				return nil, false, "", err
			}
			return page.Data, page.HasMore, page.NextCursor, nil
		}, yield)
	}
}

// walk reads the pages from cursor on, yielding their items, until a page says
// there is no more, fetch fails or yield asks to stop. A page that says there is
// more but gives no new cursor is an error, not a loop over the same page.
func walk[T any](cursor string, fetch func(cursor string) (items []T, more bool, next string, err error), yield func(T, error) bool) {
	for {
		items, more, next, err := fetch(cursor)
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
		if !more {
			return
		}
		if next == "" || next == cursor {
			var zero T
			yield(zero, fmt.Errorf("client: a page after cursor %q says there is more but gives no new cursor (%q)", cursor, next))
			return
		}
		cursor = next
	}
}

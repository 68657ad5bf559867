package console

import (
	"fmt"
	"html/template"
)

// layout frames every page; a page defines "content". The navigation and the
// logout form show only to a logged-in operator (a CSRF token).
const layout = `{{define "layout"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · orderflow console</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
nav a{margin-right:1rem}.error{color:#a00}.notice{color:#060}form.inline{display:inline}
pre{background:#f6f6f6;padding:.5rem;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere}
</style></head><body>
{{if .CSRF}}<nav><a href="/orders">Orders</a><a href="/orders?status=PAYMENT_PENDING">Stuck payments</a><a href="/dlq">Dead letters</a><a href="/findings">Findings</a>
<form class="inline" method="post" action="/logout"><input type="hidden" name="csrf" value="{{.CSRF}}"><button>Log out</button></form></nav>{{end}}
<h1>{{.Title}}</h1>
{{if .Error}}<p class="error" id="error">{{.Error}}</p>{{end}}
{{template "content" .}}
</body></html>{{end}}`

const loginPage = `{{define "content"}}<form method="post" action="/login">
<label>Operator token <input type="password" name="token" maxlength="512" autocomplete="current-password" required autofocus></label>
<button>Log in</button></form>{{end}}`

const errorPage = `{{define "content"}}<p><a href="/orders">Back to the orders</a></p>{{end}}`

const ordersPage = `{{define "content"}}{{with .Data}}<form method="get" action="/orders">
<label>Tenant <input name="tenant" value="{{.Tenant}}" maxlength="64"></label>
<label>Status <select name="status"><option value="">any</option>{{$s := .Status}}{{range .Statuses}}<option{{if eq (print .) $s}} selected{{end}}>{{.}}</option>{{end}}</select></label>
<button>Show</button></form>
<table id="orders"><tr><th>Order</th><th>Tenant</th><th>Status</th><th>Amount</th><th>Created</th><th>Updated</th></tr>
{{range .Orders}}<tr><td><a href="/orders/{{.ID}}">{{.ID}}</a></td><td>{{.Tenant}}</td><td>{{.Status}}</td><td>{{money .Amount .Currency}}</td><td>{{stamp .CreatedAt}}</td><td>{{stamp .UpdatedAt}}</td></tr>
{{else}}<tr><td colspan="6">No orders.</td></tr>{{end}}</table>
{{if .Next}}<p><a href="{{.Next}}">Next page</a></p>{{end}}{{end}}{{end}}`

const orderPage = `{{define "content"}}{{with .Data}}{{with .Order}}<table id="order">
<tr><th>Order</th><td>{{.ID}}</td></tr><tr><th>Tenant</th><td>{{.Tenant}}</td></tr>
<tr><th>Status</th><td id="status">{{.Status}}</td></tr><tr><th>Amount</th><td>{{money .Amount .Currency}} (refunded {{.AmountRefunded}})</td></tr>
<tr><th>Customer</th><td>{{.CustomerID}}</td></tr><tr><th>Payment</th><td>{{dash .PaymentRef}}</td></tr>
<tr><th>Failure</th><td>{{dash .Failure}}</td></tr><tr><th>Dispute</th><td>{{dash .Dispute}}</td></tr>
<tr><th>Workflow</th><td>{{.WorkflowID}}{{end}}{{if .WorkflowURL}} · <a href="{{.WorkflowURL}}" rel="noreferrer">in Temporal's Web UI</a>{{end}}</td></tr>
<tr><th>Request</th><td>{{.Request}}</td></tr></table>
<h2>Timeline</h2>
<table id="timeline"><tr><th>When</th><th>What</th><th>Detail</th></tr>
{{range .Entries}}<tr><td>{{stamp .At}}</td><td>{{.What}}</td><td>{{.Detail}}</td></tr>{{end}}</table>
<p>The events the order published are on the events topic, keyed by its workflow ID; PostgreSQL does not record them.</p>
{{if .Findings}}<p><a href="/findings">Acknowledge its open findings</a></p>{{end}}{{end}}{{end}}`

// The list cuts what a letter says (cut): a hostile producer can put ten
// kilobytes in an id. The letter's own page shows it whole.
const lettersPage = `{{define "content"}}{{with .Data}}{{with .Summary}}<p class="notice" id="summary">{{if .DryRun}}Dry run, nothing written: {{end}}{{if .Selected}}{{.Selected}}: {{end}}{{.Summary}}</p>{{end}}
<form method="post" action="/dlq/redrive"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<p>Leave every field empty to redrive every letter. An eventId is a tenant's and a kind's: give all three, or a letter's ID.</p>
<label>Tenant <input name="tenant" maxlength="64"></label>
<label>Kind <input name="kind" maxlength="64"></label>
<label>eventId or CloudEvent id <input name="event_id" maxlength="1024"></label>
<label>CloudEvent source <input name="source" maxlength="1024"></label>
<label>or letter ID <input name="id" maxlength="64"></label>
<label><input type="checkbox" name="dry_run" value="1"> dry run</label> <button>Redrive</button></form>
<table id="letters"><tr><th>Letter</th><th>Tenant</th><th>Kind</th><th>Event</th><th>Dead-lettered</th><th>From</th><th>Group</th><th>Bytes</th><th>Error</th></tr>
{{range .Letters}}<tr><td><a href="/dlq/{{.Partition}}:{{.Offset}}">{{.Partition}}:{{.Offset}}</a></td><td>{{dash (cut .Identity.Tenant)}}</td><td>{{dash .Identity.Kind}}</td>
<td>{{dash (cut .Identity.EventID)}}{{with .Identity.Source}} of {{cut .}}{{end}}</td><td>{{stamp .Time}}</td><td>{{cut .FromTopic}}/{{.FromPartition}}@{{.FromOffset}}</td><td>{{dash (cut .Group)}}</td><td>{{.Bytes}}{{if not .Whole}} (cut){{end}}</td><td>{{cut .Error}}</td></tr>
{{else}}<tr><td colspan="9">No dead letters.</td></tr>{{end}}</table>
{{if .More}}<p>Only the first {{len .Letters}} are listed.</p>{{end}}{{end}}{{end}}`

const letterPage = `{{define "content"}}{{with .Data}}<p>Showing a letter is logged with your token's digest. Card tokens and secrets are redacted.</p>
<table id="letter"><tr><th>Letter ID</th><td>{{.Info.Identity.ID}}</td></tr>
<tr><th>Tenant</th><td>{{dash .Info.Identity.Tenant}}</td></tr><tr><th>Kind</th><td>{{dash .Info.Identity.Kind}}</td></tr>
<tr><th>Event</th><td id="event">{{dash .Info.Identity.EventID}}</td></tr>{{with .Info.Identity.Source}}<tr><th>Source</th><td>{{.}}</td></tr>{{end}}
<tr><th>Dead-lettered</th><td>{{stamp .Info.Time}}</td></tr>
<tr><th>From</th><td>{{.Info.FromTopic}}/{{.Info.FromPartition}}@{{.Info.FromOffset}} (group {{dash .Info.Group}})</td></tr>
<tr><th>Error</th><td>{{.Info.Error}}</td></tr><tr><th>Key</th><td>{{dash .Key}}</td></tr>
{{range .Headers}}<tr><th>Header {{.Key}}</th><td>{{printf "%s" .Value}}</td></tr>{{end}}</table>
{{if not .Whole}}<p>Only the start of the value was kept.</p>{{end}}
<pre id="value">{{.Value}}</pre><p><a href="/dlq">Back to the dead letters</a></p>{{end}}{{end}}`

const findingsPage = `{{define "content"}}{{with .Data}}<table id="findings"><tr><th>ID</th><th>Found</th><th>Kind</th><th>Action</th><th>Order</th><th>Tenant</th><th>Provider</th><th>Amount</th><th>Detail</th><th>Acknowledge</th></tr>
{{range .Findings}}<tr id="finding-{{.ID}}"><td>{{.ID}}</td><td>{{stamp .FoundAt}}</td><td>{{.Kind}}</td><td>{{.Action}}</td><td>{{if .OrderID}}<a href="/orders/{{.OrderID}}">{{.OrderID}}</a>{{else}}-{{end}}</td><td>{{dash .Tenant}}</td><td>{{dash .ProviderID}}</td><td>{{money .Amount .Currency}}</td><td>{{.Detail}}</td>
<td><form method="post" action="/findings/{{.ID}}/ack"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<input name="by" placeholder="your name" maxlength="64" required> <input name="note" placeholder="note" maxlength="500"> <button>Acknowledge</button></form></td></tr>
{{else}}<tr><td colspan="10">No open findings.</td></tr>{{end}}</table>
{{if eq (len .Findings) .Max}}<p>The oldest {{.Max}} are listed.</p>{{end}}{{end}}{{end}}`

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{"stamp": stamp, "dash": dash, "money": money, "cut": cut}
	pages := map[string]string{"login": loginPage, "error": errorPage, "orders": ordersPage, "order": orderPage,
		"letters": lettersPage, "letter": letterPage, "findings": findingsPage}
	out := make(map[string]*template.Template, len(pages))
	for name, text := range pages {
		t, err := template.New(name).Funcs(funcs).Parse(layout)
		if err == nil {
			_, err = t.Parse(text)
		}
		if err != nil {
			return nil, fmt.Errorf("console page %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

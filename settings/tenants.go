package settings

import (
	"fmt"
	"time"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/tenants/fairness"
	"github.com/orderflow/orderflow/tenants/quota"
)

// Tenants are the tenants' shares and budgets, which every process reads.
type Tenants struct {
	// Fairness weighs the tenants' shares of the task queues (FAIRNESS_WEIGHTS).
	Fairness fairness.Weights
	// TenantLimit is every tenant's request budget unless it has its own
	// (TENANT_RATE, TENANT_BURST), held across the fleet; every process reads
	// the tenants' own every TenantLimitsRefresh.
	TenantLimit         quota.Limit
	TenantLimitsRefresh time.Duration
}

func readTenants(e *config.Env) Tenants {
	var c Tenants
	var err error
	c.Fairness, err = fairness.Parse(e.String("FAIRNESS_WEIGHTS", ""))
	e.Invalid(err)
	c.TenantLimit = quota.Limit{Rate: float64(e.Int("TENANT_RATE", 100)), Burst: e.Int("TENANT_BURST", 200)}
	c.TenantLimitsRefresh = e.Duration("TENANT_LIMITS_REFRESH", 30*time.Second)
	if err := c.TenantLimit.Valid(); err != nil {
		e.Invalid(fmt.Errorf("TENANT_RATE, TENANT_BURST: %w", err))
	}
	return c
}

// payments reads how to reach the payment provider (PAYMENTS_URL,
// PAYMENTS_API_KEY, PAYMENTS_TIMEOUT, PAYMENTS_RETURN_URL, PAYMENTS_RATE).
func payments(e *config.Env, timeout time.Duration) provider.Config {
	return provider.Config{
		URL: e.String("PAYMENTS_URL", "http://127.0.0.1:8099"), APIKey: e.String("PAYMENTS_API_KEY", ""),
		Timeout: e.Duration("PAYMENTS_TIMEOUT", timeout), ReturnURL: e.String("PAYMENTS_RETURN_URL", ""),
		Rate: e.Count("PAYMENTS_RATE", 90),
	}
}

package main

import (
	"testing"

	"github.com/orderflow/orderflow/internal/testkit"
)

// docker-compose.yml gives the api every setting it requires, valid.
func TestComposeEnvironmentIsComplete(t *testing.T) {
	env, err := testkit.ComposeEnv("../../docker-compose.yml", "api")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(func(k string) string { return env[k] }); err != nil {
		t.Fatalf("the api's configuration from docker-compose.yml: %v", err)
	}
}

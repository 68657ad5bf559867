package testkit

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"regexp"

	"sigs.k8s.io/yaml"
)

// ComposeEnv is the environment docker-compose.yml gives a service, with each
// ${VAR:?...} the user must set replaced by a value of the right shape (a payload
// keyring for PAYLOAD_KEYS, a 32-character token otherwise).
func ComposeEnv(path, service string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var compose struct {
		Services map[string]struct {
			Environment map[string]any `json:"environment"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	svc, ok := compose.Services[service]
	if !ok {
		return nil, fmt.Errorf("%s: no service %s", path, service)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	required := regexp.MustCompile(`\$\{([A-Z_]+):\?[^}]*\}`)
	env := map[string]string{}
	for k, v := range svc.Environment {
		env[k] = required.ReplaceAllStringFunc(fmt.Sprint(v), func(m string) string {
			if required.FindStringSubmatch(m)[1] == "PAYLOAD_KEYS" {
				return "k1:" + base64.StdEncoding.EncodeToString(key)
			}
			return "set-by-the-user-0123456789abcdef"
		})
	}
	return env, nil
}

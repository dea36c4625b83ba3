package experiments

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"dpfl/aggregators/strategy"
)

// usedDefaults are the values the run uses for configuration keys left at
// zero or null whose value is only decided when the run is planned, by
// dotted path: nu-ftrl's tuned ν (aggregator.nu), bandmf's bands and blt's
// buffers (from the participation's realized schema), and adaptive
// clipping's noise on the unclipped count (aggregator.clip_count_stddev).
// Every other default is filled in when the configuration is decoded, so
// config.yaml states it; a key the run does not use (data.test_fraction
// of an iid partition, aggregator.memory of dpfedavg) stays zero.
func (p *Plan) usedDefaults() map[string]string {
	ag, used := p.Config.Aggregator, map[string]string{}
	m := p.Mechanism
	if m == nil {
		return used
	}
	if nu := m.Parameters().Nu; ag.Kind == "nu-ftrl" && ag.Nu == nil && nu != nil {
		used["aggregator.nu"] = fmtFloat(*nu)
	}
	if bs, ok := m.Strategy.(strategy.Banded); ok && ag.Kind == "bandmf" && ag.Bands == 0 {
		used["aggregator.bands"] = strconv.Itoa(bs.Bands())
	}
	if bs, ok := m.Strategy.(strategy.Buffered); ok && ag.Kind == "blt" && ag.Buffers == 0 {
		theta, _ := bs.Buffers()
		used["aggregator.buffers"] = strconv.Itoa(len(theta))
	}
	if ag.Adaptive() && ag.ClipCountStddev == 0 && p.Privacy.ClipCountStd > 0 {
		used["aggregator.clip_count_stddev"] = fmtFloat(p.Privacy.ClipCountStd)
	}
	return used
}

// configFile is the run's config.yaml: the normalized configuration the
// run ID is computed from (cfgYAML, written as is when nothing is left to
// the plan), with each key of usedDefaults commented with the value the
// run used ("bands: 0 # used: 27"). Comments leave the run ID alone: the
// file read back is the same configuration.
func (p *Plan) configFile(cfgYAML []byte) ([]byte, error) {
	used := p.usedDefaults()
	if len(used) == 0 {
		return cfgYAML, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(cfgYAML, &doc); err != nil || len(doc.Content) != 1 {
		return nil, fmt.Errorf("experiments: config.yaml: %v", err)
	}
	for path, v := range used {
		if n := lookupPath(doc.Content[0], path); n != nil {
			n.LineComment = "used: " + v
		}
	}
	b, err := yaml.Marshal(doc.Content[0])
	if err != nil {
		return nil, fmt.Errorf("experiments: config.yaml: %w", err)
	}
	return b, nil
}

// lookupPath returns the value node of a dotted path in a mapping, or nil.
func lookupPath(m *yaml.Node, path string) *yaml.Node {
	for _, part := range strings.Split(path, ".") {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == part {
				next = m.Content[i+1]
			}
		}
		m = next
	}
	return m
}

import Foundation
import Prometheus
import SyncAPI

extension IdentityEvents {
    /// Prometheus counters of sign-ins through identity providers (protocol §14), labelled by provider name (from the
    /// identity file, or `unknown`) and outcome (`verified`, or the check that refused the token, spaces as `_`: `unknown_key`): both label sets are
    /// bounded, whatever tokens clients send.
    ///
    /// - `syncapi_identity_tokens_total{provider, outcome}`: ID tokens checked by `POST /token`.
    /// - `syncapi_identity_key_set_reads_total{provider, result}`: key set reads, `ok` or `failed`.
    static func counting(in registry: PrometheusCollectorRegistry) -> IdentityEvents {
        IdentityEvents(
            tokenChecked: { provider, outcome in
                let name = MetricNameDescriptor(
                    namespace: "syncapi", subsystem: "identity", metricName: "tokens", unitName: "total",
                    helpText: "ID tokens checked by POST /token, by provider and outcome (verified, or the check that refused it).")
                registry.makeCounter(
                    descriptor: name, labels: [("provider", provider), ("outcome", outcome.replacingOccurrences(of: " ", with: "_"))]
                ).increment()
            },
            keySetRead: { provider, succeeded in
                let name = MetricNameDescriptor(
                    namespace: "syncapi", subsystem: "identity", metricName: "key_set_reads", unitName: "total",
                    helpText: "Reads of identity providers' key sets, by provider and result.")
                registry.makeCounter(descriptor: name, labels: [("provider", provider), ("result", succeeded ? "ok" : "failed")]).increment()
            })
    }
}

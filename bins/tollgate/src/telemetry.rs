//! Traces over OTLP/HTTP (`docs/operations.md`, "Traces"; `docs/decisions.md`, "Traces"): the
//! gateway's `tracing` spans, bridged by `tracing-opentelemetry` to the OpenTelemetry SDK and
//! sent by its OTLP exporter through the gateway's own hyper client. Off unless an endpoint is
//! configured; then nothing of it is installed, so it costs nothing.

use std::collections::HashMap;
use std::time::Duration;
use tollgate_settings::config::TracingConfig;

/// How traces are exported, as `[tracing]` and the standard `OTEL_*` variables say.
#[derive(Debug, Clone)]
pub struct TraceExport {
    /// The traces URL from `[tracing] otlp_endpoint`; `None` when an `OTEL_EXPORTER_OTLP_*`
    /// endpoint variable is set, which the exporter reads itself.
    pub endpoint: Option<String>,
    /// `[tracing] headers` (the `OTEL_EXPORTER_OTLP_*HEADERS` variables are added over them by
    /// the exporter).
    pub headers: HashMap<String, String>,
    /// `service.name`, unless `OTEL_SERVICE_NAME` (or `OTEL_RESOURCE_ATTRIBUTES`) says it.
    pub service_name: Option<String>,
    /// The sampler, unless `OTEL_TRACES_SAMPLER` says it (the SDK reads it).
    pub sampler: Option<opentelemetry_sdk::trace::Sampler>,
}

/// Whether and how to export traces: `None` when no endpoint is set anywhere, or
/// `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`. Refuses what it cannot do (another
/// exporter, the gRPC protocol, an unknown sampler), naming it.
pub fn resolve(
    config: &TracingConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<TraceExport>, String> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    match set("OTEL_TRACES_EXPORTER").as_deref().map(str::trim) {
        None | Some("otlp") => {}
        Some("none") => return Ok(None),
        Some(other) => {
            return Err(format!(
                "OTEL_TRACES_EXPORTER={other}: only otlp (or none) is supported"
            ));
        }
    }
    for var in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(protocol) = set(var) {
            if protocol.trim() != "http/protobuf" {
                return Err(format!(
                    "{var}={protocol}: traces are exported over http/protobuf only"
                ));
            }
            break;
        }
    }
    let from_env = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
        || set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
    let configured = config.otlp_endpoint.trim();
    if !from_env && configured.is_empty() {
        return Ok(None);
    }
    let endpoint = (!from_env).then(|| format!("{}/v1/traces", configured.trim_end_matches('/')));
    // Unless told otherwise, the gateway samples every request itself: the SDK's default
    // (`parentbased_always_on`) would let a client's unsampled `traceparent` (`-00`) turn the
    // gateway's tracing off for its requests (issue 42). The client's trace is still the
    // parent: its id and span carry over.
    let sampler = if set("OTEL_TRACES_SAMPLER").is_some() {
        None
    } else {
        Some(
            config
                .sampler
                .as_deref()
                .map(|name| sampler(name, config.sampler_ratio))
                .transpose()?
                .unwrap_or(opentelemetry_sdk::trace::Sampler::AlwaysOn),
        )
    };
    let service_name = if set("OTEL_SERVICE_NAME").is_some()
        || set("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| a.contains("service.name="))
    {
        None
    } else {
        Some(
            config
                .service_name
                .clone()
                .unwrap_or_else(|| "tollgate".into()),
        )
    };
    Ok(Some(TraceExport {
        endpoint,
        headers: config.headers.clone().into_iter().collect(),
        service_name,
        sampler,
    }))
}

/// A sampler by its `OTEL_TRACES_SAMPLER` name.
fn sampler(name: &str, ratio: Option<f64>) -> Result<opentelemetry_sdk::trace::Sampler, String> {
    use opentelemetry_sdk::trace::Sampler;
    let ratio = || match ratio {
        Some(r) if (0.0..=1.0).contains(&r) => Ok(r),
        Some(r) => Err(format!(
            "[tracing] sampler_ratio = {r}: a ratio from 0 to 1"
        )),
        None => Ok(1.0),
    };
    Ok(match name {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::TraceIdRatioBased(ratio()?),
        "parentbased_always_on" => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        "parentbased_always_off" => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        "parentbased_traceidratio" => {
            Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio()?)))
        }
        other => {
            return Err(format!(
                "[tracing] sampler = {other:?}: one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio"
            ));
        }
    })
}

/// The SDK's tracer provider exporting as `export` says, its batches sent from the SDK's own
/// thread through the gateway's hyper client on `runtime`. Shut it down at exit to send the
/// last batch.
pub fn provider(
    export: TraceExport,
    runtime: tokio::runtime::Handle,
) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, String> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    let client = tollgate_upstream::HttpClient::new(&tollgate_upstream::ClientConfig::default())
        .map_err(|e| format!("the OTLP client: {e}"))?;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(OtlpClient { client, runtime })
        .with_headers(export.headers);
    if let Some(endpoint) = export.endpoint {
        exporter = exporter.with_endpoint(endpoint);
    }
    let exporter = exporter
        .build()
        .map_err(|e| format!("the OTLP exporter: {e}"))?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if let Some(name) = export.service_name {
        resource = resource.with_service_name(name);
    }
    let mut builder = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build());
    if let Some(sampler) = export.sampler {
        builder = builder.with_sampler(sampler);
    }
    Ok(builder.build())
}

/// The exporter's HTTP client: the gateway's hyper client, driven on the Tokio runtime (the
/// SDK's batch thread is not one), each export bounded in time.
#[derive(Debug, Clone)]
struct OtlpClient {
    client: tollgate_upstream::HttpClient,
    runtime: tokio::runtime::Handle,
}

/// The longest an export may take; a collector that stalls loses that batch, not the gateway.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

impl opentelemetry_http::HttpClient for OtlpClient {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: http::Request<bytes::Bytes>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError>,
                > + Send
                + 'b,
        >,
    >
    where
        'a: 'b,
    {
        let client = self.client.clone();
        let work = self.runtime.spawn(async move {
            let timeouts = tollgate_upstream::Timeouts {
                connect: EXPORT_TIMEOUT,
                first_byte: EXPORT_TIMEOUT,
                idle: EXPORT_TIMEOUT,
            };
            let (parts, body) = request.into_parts();
            let request = http::Request::from_parts(parts, tollgate_upstream::full_body(body));
            let response = client.send(request, &timeouts).await?;
            let (parts, body) = response.into_parts();
            let body = tollgate_upstream::HttpClient::read_body(body, 1 << 20, &timeouts).await?;
            Ok::<_, tollgate_upstream::UpstreamError>(http::Response::from_parts(parts, body))
        });
        Box::pin(async move {
            match work.await {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(e)) => Err(e.to_string().into()),
                Err(e) => Err(e.to_string().into()),
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn traces_are_off_unless_an_endpoint_is_set_somewhere() {
        let config = TracingConfig::default();
        assert!(resolve(&config, &env(&[])).unwrap().is_none());
        // The standard variable alone turns export on; the exporter reads it.
        let on = resolve(
            &config,
            &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(on.endpoint, None);
        assert_eq!(on.service_name.as_deref(), Some("tollgate"));
        let traces_only = resolve(
            &config,
            &env(&[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://c:4318/v1/traces",
            )]),
        )
        .unwrap();
        assert!(traces_only.is_some());
        // And the SDK's switches turn it off.
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            let vars = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), off]);
            assert!(resolve(&config, &vars).unwrap().is_none(), "{off:?}");
        }
    }

    #[test]
    fn the_file_configures_what_the_environment_leaves_unsaid() {
        let config = TracingConfig {
            otlp_endpoint: "http://collector:4318/".into(),
            headers: [("x-api-key".to_owned(), "k".to_owned())].into(),
            service_name: Some("gateway-eu".into()),
            sampler: Some("parentbased_traceidratio".into()),
            sampler_ratio: Some(0.25),
        };
        let export = resolve(&config, &env(&[])).unwrap().unwrap();
        assert_eq!(
            export.endpoint.as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(export.headers["x-api-key"], "k");
        assert_eq!(export.service_name.as_deref(), Some("gateway-eu"));
        assert!(export.sampler.is_some());
        // The environment wins: its endpoint, service name and sampler are left to the SDK.
        let export = resolve(
            &config,
            &env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://other:4318"),
                ("OTEL_SERVICE_NAME", "from-env"),
                ("OTEL_TRACES_SAMPLER", "always_on"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(export.endpoint, None);
        assert_eq!(export.service_name, None);
        assert!(export.sampler.is_none());
    }

    #[test]
    fn what_cannot_be_done_is_refused_by_name() {
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")];
        let refused = |extra: (&str, &str), config: &TracingConfig| {
            let mut vars = on.to_vec();
            vars.push(extra);
            resolve(config, &env(&vars)).unwrap_err()
        };
        let plain = TracingConfig::default();
        assert!(refused(("OTEL_TRACES_EXPORTER", "zipkin"), &plain).contains("zipkin"));
        assert!(refused(("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), &plain).contains("grpc"));
        let bad = TracingConfig {
            sampler: Some("sometimes".into()),
            ..TracingConfig::default()
        };
        assert!(refused(("X", "y"), &bad).contains("sometimes"));
        let bad_ratio = TracingConfig {
            sampler: Some("traceidratio".into()),
            sampler_ratio: Some(1.5),
            ..TracingConfig::default()
        };
        assert!(refused(("X", "y"), &bad_ratio).contains("1.5"));
    }
}

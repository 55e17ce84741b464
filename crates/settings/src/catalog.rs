//! The catalog: alias → public model → entry (kind, channels, upstream id, price). DESIGN §2
//! step 4.

use crate::config::{Config, ConfigError, ModelConfig, ModelKind};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tollgate_billing::Tariff;
use tollgate_upstream::formats::Format;
use tollgate_upstream::{Endpoint, Timeouts};

/// A configured upstream, ready to call.
#[derive(Debug)]
pub struct Channel {
    /// Its configured name.
    pub name: String,
    /// What it speaks; its adapter is `tollgate_upstream::registry`'s, asked at the call.
    pub format: Format,
    /// Where and with which key.
    pub endpoint: Endpoint,
    /// Bounds the calls in flight (`max_concurrency`).
    pub permits: Arc<Semaphore>,
    /// Its `max_concurrency`, to tell the calls in flight from the permits left.
    pub max_concurrency: usize,
    /// Successes, failures, latencies, circuit breaker, the operator's switch.
    pub health: crate::channels::ChannelHealth,
    /// Its upstream keys, used in turn (`endpoint` carries the first).
    pub keys: crate::channels::KeyRing,
    /// Its share of the calls within a priority level.
    pub weight: u32,
}

/// One public model.
#[derive(Debug)]
pub struct ModelEntry {
    /// The public name (what the ledger and price book use).
    pub public: String,
    /// Which endpoints serve it.
    pub kind: ModelKind,
    /// The id sent upstream.
    pub upstream_model: String,
    /// Channels in priority order.
    pub channels: Vec<Arc<Channel>>,
    /// The priority levels: positions in `channels`, and how the level splits its calls.
    pub levels: Vec<Level>,
    /// Its price.
    pub tariff: Tariff,
    /// Text generation: the most input tokens the model takes, when the operator set it
    /// (`max_input_tokens`); otherwise the model family's (`tollgate_native_genai::models`). What
    /// the gateway cannot measure of a prompt is held up to it (`docs/decisions.md`, "Bounded
    /// settlement").
    pub max_input_tokens: Option<u64>,
    /// A realtime model's session settings (the defaults when it set none).
    pub session: crate::config::SessionSettings,
    /// An image model's family and limits (the defaults when it set none).
    pub images: crate::config::ImageSettings,
}

/// One priority level of a model: channels that split its calls by weight.
#[derive(Debug)]
pub struct Level {
    /// Positions in [`ModelEntry::channels`].
    pub members: Vec<usize>,
    /// Which member goes first, call by call.
    pub rotation: crate::channels::Rotation,
}

impl ModelEntry {
    /// A model whose channels are each a level of its own, in order.
    pub fn in_order(
        public: impl Into<String>,
        kind: ModelKind,
        upstream_model: impl Into<String>,
        channels: Vec<Arc<Channel>>,
        tariff: Tariff,
    ) -> ModelEntry {
        let levels = (0..channels.len())
            .map(|i| Level {
                members: vec![i],
                rotation: crate::channels::Rotation::new(vec![1]),
            })
            .collect();
        ModelEntry {
            public: public.into(),
            kind,
            upstream_model: upstream_model.into(),
            channels,
            levels,
            tariff,
            max_input_tokens: None,
            session: crate::config::SessionSettings::default(),
            images: crate::config::ImageSettings::default(),
        }
    }

    /// The channels in the order this call offers them: level by level, each level's rotation
    /// deciding who goes first.
    pub fn call_order(&self) -> impl Iterator<Item = &Arc<Channel>> {
        self.levels.iter().flat_map(|level| {
            level
                .rotation
                .order()
                .into_iter()
                .filter_map(|i| level.members.get(i).and_then(|m| self.channels.get(*m)))
        })
    }
}

/// A native model that draws images must price them (docs/decisions.md, "Images"): by token
/// class, with an `image_out` price — else its images would be charged at its text price, the
/// peers' commonest image-billing complaint.
fn check_image_output_priced(public: &str, m: &ModelConfig) -> Result<(), ConfigError> {
    if m.kind != ModelKind::NativeText {
        return Ok(());
    }
    let id = m.upstream_model.as_deref().unwrap_or(public);
    let draws = tollgate_native_genai::models::limits(id)
        .or_else(|| tollgate_native_genai::models::limits(public))
        .is_some_and(|l| l.images.is_some());
    if draws
        && m.price
            .class_price(tollgate_billing::TokenClass::ImageOut)
            .is_none()
    {
        return Err(ConfigError::Invalid(format!(
            "model {public:?} draws images: price it by meter = \"token_classes\" with an \
             image_out price, so its images are not charged as text"
        )));
    }
    Ok(())
}

/// An OpenAI Images model is priced as its family is (docs/decisions.md, "Images by the
/// picture"): gpt-image by token class, dall-e by the picture — and a price by size names only
/// sizes (and `/hd` only qualities) the family draws, so that a typo cannot leave the size it
/// meant at `per_image`.
fn check_images_priced(public: &str, m: &ModelConfig) -> Result<(), ConfigError> {
    if m.kind != ModelKind::Images {
        return Ok(());
    }
    let family = m.images.unwrap_or_default().family;
    let wanted = match family.pricing() {
        tollgate_images::Pricing::ByTokenClass => tollgate_billing::Meter::TokenClasses,
        tollgate_images::Pricing::ByPicture => tollgate_billing::Meter::Images,
    };
    if m.price.meter() != wanted {
        return Err(ConfigError::Invalid(format!(
            "model {public:?}: its family ({}) is priced by meter = {:?}, but its price says {:?}",
            family.name(),
            wanted.as_str(),
            m.price.meter().as_str()
        )));
    }
    let Tariff::Images {
        per_image_by_size, ..
    } = &m.price
    else {
        return Ok(());
    };
    let tollgate_images::family::SizeRule::Listed(sizes) = family.sizes() else {
        return Ok(());
    };
    let hd = family.qualities().contains(&tollgate_images::Quality::Hd);
    let priced: Vec<String> = sizes
        .iter()
        .flat_map(|size| {
            let tier = |t: tollgate_billing::ImageTier| t.key(size.width, size.height);
            std::iter::once(tier(tollgate_billing::ImageTier::Standard))
                .chain(hd.then(|| tier(tollgate_billing::ImageTier::Hd)))
        })
        .collect();
    match per_image_by_size.keys().find(|key| !priced.contains(key)) {
        None => Ok(()),
        Some(key) => Err(ConfigError::Invalid(format!(
            "model {public:?}: price: per_image_by_size names {key}, which the model does not draw; it draws {}",
            priced.join(", ")
        ))),
    }
}

/// A price by size names only sizes the model makes (its row of the generic table, under its
/// public or its upstream id): a size it cannot make would never be asked for, and a typo would
/// leave the size it meant at `per_second`.
fn check_sizes_priced(public: &str, m: &ModelConfig) -> Result<(), ConfigError> {
    let Tariff::VideoSeconds {
        per_second_by_size, ..
    } = &m.price
    else {
        return Ok(());
    };
    if per_second_by_size.is_empty() {
        return Ok(());
    }
    let spec = tollgate_generic_tasks::spec(public).or_else(|| {
        m.upstream_model
            .as_deref()
            .and_then(tollgate_generic_tasks::spec)
    });
    let made = spec.map_or_else(Vec::new, |spec| {
        tollgate_openai_videos::Size::names_of(spec.size_pairs())
    });
    match per_second_by_size.keys().find(|size| !made.contains(size)) {
        None => Ok(()),
        Some(size) if made.is_empty() => Err(ConfigError::Invalid(format!(
            "model {public:?}: price: per_second_by_size names {size}, but the model has no sizes to price (only generic-video models of known sizes do)"
        ))),
        Some(size) => Err(ConfigError::Invalid(format!(
            "model {public:?}: price: per_second_by_size names {size}, which the model does not make; it makes {}",
            made.join(", ")
        ))),
    }
}

/// Every model and alias.
#[derive(Debug, Default)]
pub struct Catalog {
    aliases: HashMap<String, String>,
    models: HashMap<String, Arc<ModelEntry>>,
    channels: HashMap<String, Arc<Channel>>,
}

impl Catalog {
    /// Builds the catalog. `sim_base_url` replaces `"sim"` base URLs; `env` looks up channel keys.
    pub fn from_config(
        config: &Config,
        sim_base_url: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Catalog, ConfigError> {
        Catalog::from_config_keeping(config, sim_base_url, &env, &|_| None)
    }

    /// [`Catalog::from_config`], serving on the channel `keep` hands back for a name where it
    /// hands one back (a reload keeps the channels it leaves unchanged, with their circuit,
    /// key rotation, permits and counters: `docs/decisions.md`, "Reloading"). Each channel is
    /// checked as written either way.
    pub fn from_config_keeping(
        config: &Config,
        sim_base_url: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
        keep: &dyn Fn(&str) -> Option<Arc<Channel>>,
    ) -> Result<Catalog, ConfigError> {
        let mut channels = HashMap::new();
        for c in &config.channels {
            let base_url = if c.base_url == "sim" {
                sim_base_url
                    .ok_or_else(|| {
                        ConfigError::Invalid(format!(
                            "channel {:?} uses the simulator, but [simulator] is not enabled",
                            c.name
                        ))
                    })?
                    .to_owned()
            } else if c.base_url.starts_with("http://") || c.base_url.starts_with("https://") {
                c.base_url.clone()
            } else {
                return Err(ConfigError::Invalid(format!(
                    "channel {:?}: base_url must be http(s)://… or \"sim\"",
                    c.name
                )));
            };
            let keys: Vec<String> = match &c.api_key_env {
                // The simulator wants a key where the vendor does, and accepts any.
                None if c.base_url == "sim" => vec!["sim".to_owned()],
                None => Vec::new(),
                Some(vars) => vars
                    .names()
                    .into_iter()
                    .map(|var| {
                        env(var).ok_or_else(|| {
                            ConfigError::Invalid(format!(
                                "channel {:?}: the environment variable {var} holding its key is not set",
                                c.name
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?,
            };
            if c.api_key_env.as_ref().is_some_and(|k| k.names().is_empty()) {
                return Err(ConfigError::Invalid(format!(
                    "channel {:?}: api_key_env names no variable",
                    c.name
                )));
            }
            if c.weight == 0 {
                return Err(ConfigError::Invalid(format!(
                    "channel {:?}: weight must be at least 1",
                    c.name
                )));
            }
            let api_key = keys.first().cloned();
            if c.max_concurrency == 0 {
                return Err(ConfigError::Invalid(format!(
                    "channel {:?}: max_concurrency must be at least 1",
                    c.name
                )));
            }
            let channel = Channel {
                name: c.name.clone(),
                format: c.format,
                endpoint: Endpoint {
                    base_url,
                    api_key,
                    timeouts: Timeouts {
                        connect: Duration::from_millis(c.connect_timeout_ms),
                        first_byte: Duration::from_millis(c.first_byte_timeout_ms),
                        idle: Duration::from_millis(c.idle_timeout_ms),
                    },
                    traceparent: None,
                },
                permits: Arc::new(Semaphore::new(c.max_concurrency)),
                max_concurrency: c.max_concurrency,
                health: crate::channels::ChannelHealth::default(),
                keys: crate::channels::KeyRing::new(keys),
                weight: c.weight,
            };
            let channel = keep(&c.name).unwrap_or_else(|| Arc::new(channel));
            if channels.insert(c.name.clone(), channel).is_some() {
                return Err(ConfigError::Invalid(format!(
                    "two channels are named {:?}",
                    c.name
                )));
            }
        }
        let mut models = HashMap::new();
        for (public, m) in &config.models {
            m.price
                .validate()
                .map_err(|e| ConfigError::Invalid(format!("model {public:?}: price: {e}")))?;
            let meters = m.kind.meters();
            if !meters.contains(&m.price.meter()) {
                let names: Vec<&str> = meters.iter().map(|m| m.as_str()).collect();
                return Err(ConfigError::Invalid(format!(
                    "model {public:?}: its endpoints charge by {}, but its price says meter = {:?}",
                    names.join(" or "),
                    m.price.meter().as_str()
                )));
            }
            check_image_output_priced(public, m)?;
            check_images_priced(public, m)?;
            check_sizes_priced(public, m)?;
            // Each level's positions in the flat list of the model's channels.
            let mut levels = Vec::new();
            let mut next = 0;
            for level in &m.channels {
                let size = level.names().len();
                if size == 0 {
                    return Err(ConfigError::Invalid(format!(
                        "model {public:?} lists an empty channel level"
                    )));
                }
                levels.push((next..next + size).collect::<Vec<usize>>());
                next += size;
            }
            let entry_channels = m
                .channels
                .iter()
                .flat_map(|level| level.names())
                .map(|name| {
                    let channel = channels.get(name).ok_or_else(|| {
                        ConfigError::Invalid(format!(
                            "model {public:?} names channel {name:?}, which is not configured"
                        ))
                    })?;
                    if !m.kind.served_by(channel.format) {
                        return Err(ConfigError::Invalid(format!(
                            "model {public:?} is {:?} but channel {name:?} speaks {}",
                            m.kind, channel.format
                        )));
                    }
                    Ok(channel.clone())
                })
                .collect::<Result<Vec<_>, _>>()?;
            if entry_channels.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "model {public:?} has no channels"
                )));
            }
            let levels = levels
                .into_iter()
                .map(|members| Level {
                    rotation: crate::channels::Rotation::new(
                        members.iter().map(|i| entry_channels[*i].weight).collect(),
                    ),
                    members,
                })
                .collect();
            models.insert(
                public.clone(),
                Arc::new(ModelEntry {
                    public: public.clone(),
                    kind: m.kind,
                    upstream_model: m.upstream_model.clone().unwrap_or_else(|| public.clone()),
                    channels: entry_channels,
                    levels,
                    tariff: m.price.clone(),
                    max_input_tokens: m.max_input_tokens,
                    session: m.session.clone().unwrap_or_default(),
                    images: m.images.unwrap_or_default(),
                }),
            );
        }
        for (alias, target) in &config.aliases {
            if !models.contains_key(target) {
                return Err(ConfigError::Invalid(format!(
                    "alias {alias:?} points at {target:?}, which is not a configured model"
                )));
            }
        }
        Ok(Catalog {
            aliases: config.aliases.clone().into_iter().collect(),
            models,
            channels,
        })
    }

    /// Resolves a client's model name (an alias or a public name) to its entry, when it serves
    /// `kind`.
    pub fn resolve(&self, requested: &str, kind: ModelKind) -> Option<&Arc<ModelEntry>> {
        self.lookup(requested).filter(|m| m.kind == kind)
    }

    /// The model a client's name (an alias or a public name) stands for, of any kind.
    pub fn lookup(&self, requested: &str) -> Option<&Arc<ModelEntry>> {
        let public = self
            .aliases
            .get(requested)
            .map_or(requested, String::as_str);
        self.models.get(public)
    }

    /// Every name a client may use — public models and aliases — sorted, so that model pickers
    /// offer what the endpoints accept.
    pub fn client_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .models
            .keys()
            .chain(self.aliases.keys())
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// [`Catalog::resolve`], or the client's 400 naming `model`.
    pub fn require(
        &self,
        requested: &str,
        kind: ModelKind,
    ) -> Result<Arc<ModelEntry>, tollgate_exchange::errors::ApiError> {
        // A missing `model` (decoded as empty where the protocol crate defaults it) is a missing
        // field, not an unknown model called ''.
        if requested.trim().is_empty() {
            return Err(tollgate_exchange::errors::ApiError::invalid(
                "model",
                "required",
                "'model' is required",
            ));
        }
        self.resolve(requested, kind)
            .cloned()
            .ok_or_else(|| tollgate_exchange::errors::ApiError::unknown_model(requested))
    }

    /// The aliases that stand for `public`, sorted.
    pub fn aliases_of(&self, public: &str) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .aliases
            .iter()
            .filter(|(_, target)| target.as_str() == public)
            .map(|(alias, _)| alias.as_str())
            .collect();
        names.sort_unstable();
        names
    }

    /// A channel by its configured name (tasks remember theirs).
    pub fn channel(&self, name: &str) -> Option<&Arc<Channel>> {
        self.channels.get(name)
    }

    /// Every channel, sorted by name.
    pub fn channels(&self) -> Vec<Arc<Channel>> {
        let mut all: Vec<_> = self.channels.values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Every public model, sorted by name.
    pub fn models(&self) -> Vec<&Arc<ModelEntry>> {
        let mut all: Vec<_> = self.models.values().collect();
        all.sort_by(|a, b| a.public.cmp(&b.public));
        all
    }
}

/// OpenAI's model object (`GET /v1/models`, `GET /v1/models/{model}`): a name a client may use.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Model"))]
pub struct ModelObject {
    /// The name (a public model or an alias).
    pub id: String,
    /// `model`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "model")))]
    pub object: &'static str,
    /// Always 0: a configured model has no creation time.
    pub created: i64,
    /// `tollgate`.
    pub owned_by: &'static str,
}

impl ModelObject {
    /// The object of a name a client may use.
    pub fn named(id: &str) -> ModelObject {
        ModelObject {
            id: id.to_owned(),
            object: "model",
            created: 0,
            owned_by: "tollgate",
        }
    }
}

/// OpenAI's model list (`GET /v1/models`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelList {
    /// `list`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "list")))]
    pub object: &'static str,
    /// The names the key may use.
    pub data: Vec<ModelObject>,
}

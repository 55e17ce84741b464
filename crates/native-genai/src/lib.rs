//! # tollgate-native-genai
//!
//! The native text-generation format, sans-IO (SPEC §2.9; wire-formats §6 and §8):
//! `generateContent` requests and responses (`contents`, `parts` including thought parts and
//! thought signatures, `systemInstruction`, `generationConfig.thinkingConfig`, `usageMetadata`
//! with `thoughtsTokenCount`), with unknown fields preserved, and the chat-completions types of
//! the bridge.
//!
//! Status: the types arrive with the native text-generation work; until then the gateway answers
//! `/v1beta/models/…` with 501 in Google's error shape.

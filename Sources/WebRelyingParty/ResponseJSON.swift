import Foundation
import RelyingParty
import WebAuthn

/// `RegistrationResponseJSON` (WebAuthn L3 §5.1.10), what `PublicKeyCredential.toJSON()` gives for a new
/// credential, read into the parts ``RelyingPartyVerifier`` checks.
///
/// Byte members are unpadded base64url, as browsers write them; padding is refused. `id` must equal `rawId`
/// and `type` must be `public-key`. `response.transports` (the browser's `getTransports()`) is optional because
/// some clients leave it out; the public-key convenience members are ignored, since the attestation object
/// holds the key. Unknown members are ignored.
public struct RegistrationResponseJSON: Hashable, Sendable {
    /// `rawId`.
    public var credentialID: [UInt8]
    /// clientDataJSON, the attestation object and the transports.
    public var response: RegistrationResponse
    /// `platform`, `cross-platform`, or nil when the browser did not say.
    public var authenticatorAttachment: String?

    /// Reads the JSON body.
    public init(json: [UInt8]) throws(JSONBodyError) {
        try self.init(object: JSONObject(json))
    }

    init(object: JSONObject) throws(JSONBodyError) {
        credentialID = try object.credentialID()
        let response = try object.object("response")
        let transports = try response.optionalStrings("transports", maximumCount: 8)
        for transport in transports where !JSONObject.isToken(transport) {
            throw .outOfBounds("response.transports", reason: "\"\(transport)\" is not a transport name")
        }
        self.response = RegistrationResponse(
            clientDataJSON: try response.bytes("clientDataJSON"),
            attestationObject: try response.bytes("attestationObject"),
            transports: transports)
        authenticatorAttachment = try object.attachment()
        try object.checkExtensionResults()
    }
}

/// `AuthenticationResponseJSON` (WebAuthn L3 §5.1.11), what `PublicKeyCredential.toJSON()` gives for an
/// assertion, read into the parts ``RelyingPartyVerifier`` checks. The rules are those of
/// ``RegistrationResponseJSON``; `response.userHandle` may be absent or null.
public struct AuthenticationResponseJSON: Hashable, Sendable {
    /// The credential ID, clientDataJSON, authenticator data, signature and user handle.
    public var response: AuthenticationResponse
    /// `platform`, `cross-platform`, or nil when the browser did not say.
    public var authenticatorAttachment: String?

    /// Reads the JSON body.
    public init(json: [UInt8]) throws(JSONBodyError) {
        try self.init(object: JSONObject(json))
    }

    init(object: JSONObject) throws(JSONBodyError) {
        let credentialID = try object.credentialID()
        let response = try object.object("response")
        let userHandle = try response.optionalBytes("userHandle")
        if let userHandle, userHandle.count > 64 {
            throw .outOfBounds("response.userHandle", reason: "longer than 64 bytes")
        }
        self.response = AuthenticationResponse(
            credentialID: credentialID,
            clientDataJSON: try response.bytes("clientDataJSON"),
            authenticatorData: try response.bytes("authenticatorData"),
            signature: try response.bytes("signature"),
            userHandle: userHandle)
        authenticatorAttachment = try object.attachment()
        try object.checkExtensionResults()
    }
}

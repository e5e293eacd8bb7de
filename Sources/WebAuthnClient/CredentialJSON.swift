import Basics
import JSON

/// The `PublicKeyCredential` a registration returns, and its `toJSON()`: `RegistrationResponseJSON` (WebAuthn L3
/// §5.1, "toJSON"), which py_webauthn's `verify_registration_response` and SimpleWebAuthn's
/// `verifyRegistrationResponse` read as it is.
public struct RegistrationCredential: Hashable, Sendable {
    /// The credential ID (`rawId`).
    public var id: [UInt8]
    public var clientDataJSON: [UInt8]
    /// The attestation object as the client passes it on (after attestation conveyance, §5.1.3 step 22).
    public var attestationObject: [UInt8]
    /// `getAuthenticatorData()`.
    public var authenticatorData: [UInt8]
    /// `getTransports()`: unique, in lexicographical order.
    public var transports: [AuthenticatorTransport]
    /// `getPublicKey()`: the credential key as a DER SubjectPublicKeyInfo; nil for an algorithm this client cannot
    /// convert (only ES256 here).
    public var publicKey: [UInt8]?
    /// `getPublicKeyAlgorithm()`: the COSE algorithm (-7).
    public var publicKeyAlgorithm: Int
    public var authenticatorAttachment: AuthenticatorAttachment
    public var clientExtensionResults: ClientExtensionOutputs

    public init(
        id: [UInt8], clientDataJSON: [UInt8], attestationObject: [UInt8], authenticatorData: [UInt8],
        transports: [AuthenticatorTransport], publicKey: [UInt8]?, publicKeyAlgorithm: Int,
        authenticatorAttachment: AuthenticatorAttachment, clientExtensionResults: ClientExtensionOutputs
    ) {
        self.id = id
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.authenticatorData = authenticatorData
        self.transports = transports
        self.publicKey = publicKey
        self.publicKeyAlgorithm = publicKeyAlgorithm
        self.authenticatorAttachment = authenticatorAttachment
        self.clientExtensionResults = clientExtensionResults
    }

    /// `RegistrationResponseJSON`, members in the order of its IDL: `id`, `rawId`, `response` (`clientDataJSON`,
    /// `authenticatorData`, `transports`, `publicKey`, `publicKeyAlgorithm`, `attestationObject`),
    /// `authenticatorAttachment`, `clientExtensionResults`, `type`.
    public var jsonValue: JSONValue {
        var response: [JSONMember] = [
            JSONMember("clientDataJSON", .string(clientDataJSON.base64URLEncodedString)),
            JSONMember("authenticatorData", .string(authenticatorData.base64URLEncodedString)),
            JSONMember("transports", .array(transports.map { .string($0.rawValue) })),
        ]
        if let publicKey { response.append(JSONMember("publicKey", .string(publicKey.base64URLEncodedString))) }
        response += [
            JSONMember("publicKeyAlgorithm", .number(Double(publicKeyAlgorithm))),
            JSONMember("attestationObject", .string(attestationObject.base64URLEncodedString)),
        ]
        return CredentialJSON.object(
            id: id, response: response, attachment: authenticatorAttachment, extensions: clientExtensionResults)
    }

    /// The JSON text.
    public func json(_ layout: JSONLayout = .compact) -> [UInt8] { jsonValue.serialized(layout) }
}

/// The `PublicKeyCredential` an authentication returns, and its `toJSON()`: `AuthenticationResponseJSON` (WebAuthn L3
/// §5.1, "toJSON"), which py_webauthn's `verify_authentication_response` and SimpleWebAuthn's
/// `verifyAuthenticationResponse` read as it is.
public struct AuthenticationCredential: Hashable, Sendable {
    /// The credential ID (`rawId`).
    public var id: [UInt8]
    public var clientDataJSON: [UInt8]
    public var authenticatorData: [UInt8]
    /// The ASN.1 DER ECDSA signature over `authenticatorData ‖ SHA-256(clientDataJSON)`.
    public var signature: [UInt8]
    /// The user handle; nil when the authenticator returned none (the member is then left out).
    public var userHandle: [UInt8]?
    public var authenticatorAttachment: AuthenticatorAttachment
    public var clientExtensionResults: ClientExtensionOutputs

    public init(
        id: [UInt8], clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8], userHandle: [UInt8]?,
        authenticatorAttachment: AuthenticatorAttachment, clientExtensionResults: ClientExtensionOutputs
    ) {
        self.id = id
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
        self.authenticatorAttachment = authenticatorAttachment
        self.clientExtensionResults = clientExtensionResults
    }

    /// `AuthenticationResponseJSON`, members in the order of its IDL: `id`, `rawId`, `response` (`clientDataJSON`,
    /// `authenticatorData`, `signature`, `userHandle`), `authenticatorAttachment`, `clientExtensionResults`, `type`.
    public var jsonValue: JSONValue {
        var response: [JSONMember] = [
            JSONMember("clientDataJSON", .string(clientDataJSON.base64URLEncodedString)),
            JSONMember("authenticatorData", .string(authenticatorData.base64URLEncodedString)),
            JSONMember("signature", .string(signature.base64URLEncodedString)),
        ]
        if let userHandle { response.append(JSONMember("userHandle", .string(userHandle.base64URLEncodedString))) }
        return CredentialJSON.object(
            id: id, response: response, attachment: authenticatorAttachment, extensions: clientExtensionResults)
    }

    /// The JSON text.
    public func json(_ layout: JSONLayout = .compact) -> [UInt8] { jsonValue.serialized(layout) }
}

private enum CredentialJSON {
    static func object(
        id: [UInt8], response: [JSONMember], attachment: AuthenticatorAttachment, extensions: ClientExtensionOutputs
    ) -> JSONValue {
        .object([
            JSONMember("id", .string(id.base64URLEncodedString)),
            JSONMember("rawId", .string(id.base64URLEncodedString)),
            JSONMember("response", .object(response)),
            JSONMember("authenticatorAttachment", .string(attachment.rawValue)),
            JSONMember("clientExtensionResults", extensions.jsonValue),
            JSONMember("type", .string("public-key")),
        ])
    }
}

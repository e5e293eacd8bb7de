import Basics
import JSON
import WebAuthn

/// The relying party as the client shows it (WebAuthn §5.4.2).
public struct RelyingPartyEntity: Hashable, Sendable, Codable {
    /// The RP ID: a registrable domain suffix of the origins, for example `example.org`.
    public var id: String
    /// A name for people.
    public var name: String

    /// An entity with `id` and a display `name` (the ID when none is given).
    public init(id: String, name: String? = nil) {
        self.id = id
        self.name = name ?? id
    }
}

/// The user account a credential is created for (WebAuthn §5.4.3).
public struct UserEntity: Hashable, Sendable {
    /// The user handle: at most 64 opaque bytes, no personal information.
    public var id: [UInt8]
    /// An account identifier such as an e-mail address.
    public var name: String
    /// A name for people.
    public var displayName: String

    /// A user with handle `id`, account `name` and `displayName` (the name when none is given).
    public init(id: [UInt8], name: String, displayName: String? = nil) {
        self.id = id
        self.name = name
        self.displayName = displayName ?? name
    }
}

/// What a relying party asks for when it starts a registration, and later checks the response against.
///
/// Keep it (server-side) between sending the options and verifying the response. The challenge is the
/// caller's: pass at least 16 fresh random bytes.
public struct RegistrationOptions: Hashable, Sendable {
    /// The random challenge the client must echo in clientDataJSON.
    public var challenge: [UInt8]
    /// The account the credential is for; its `id` becomes the record's user handle.
    public var user: UserEntity
    /// Acceptable credential algorithms, most preferred first (`pubKeyCredParams`).
    public var algorithms: [COSEAlgorithm]
    /// Whether the response must carry the UV flag.
    public var userVerification: UserVerificationRequirement
    /// Whether a discoverable credential is wanted.
    public var residentKey: ResidentKeyRequirement
    /// Which attestation to ask for.
    public var attestation: AttestationConveyancePreference
    /// Credential IDs the user already has here, so the authenticator does not create another.
    public var excludeCredentials: [[UInt8]]
    /// How long the client should wait, in milliseconds.
    public var timeout: Int?
    /// WebAuthn Level 3 hints (§5.8.7): `security-key`, `client-device`, `hybrid`, most preferred first.
    /// Passed to the client as they are; the JSON form omits the member when the list is empty.
    public var hints: [String]

    /// Options with the given challenge and user; the rest default to ES256, UV preferred,
    /// a preferred discoverable credential, no attestation and no hints.
    public init(
        challenge: [UInt8],
        user: UserEntity,
        algorithms: [COSEAlgorithm] = [.es256],
        userVerification: UserVerificationRequirement = .preferred,
        residentKey: ResidentKeyRequirement = .preferred,
        attestation: AttestationConveyancePreference = .none,
        excludeCredentials: [[UInt8]] = [],
        timeout: Int? = nil,
        hints: [String] = []
    ) {
        self.challenge = challenge
        self.user = user
        self.algorithms = algorithms
        self.userVerification = userVerification
        self.residentKey = residentKey
        self.attestation = attestation
        self.excludeCredentials = excludeCredentials
        self.timeout = timeout
        self.hints = hints
    }

    /// `PublicKeyCredentialCreationOptionsJSON` (WebAuthn §5.1.8) for `relyingParty`, the object a web
    /// page passes to `PublicKeyCredential.parseCreationOptionsFromJSON`. Keys are sorted.
    public func json(relyingParty: RelyingPartyEntity) -> [UInt8] {
        JSONValue.sortedObject([
            "rp": .sortedObject(["id": .string(relyingParty.id), "name": .string(relyingParty.name)]),
            "user": .sortedObject([
                "id": .string(user.id.base64URLEncodedString), "name": .string(user.name),
                "displayName": .string(user.displayName),
            ]),
            "challenge": .string(challenge.base64URLEncodedString),
            "pubKeyCredParams": .array(
                algorithms.map { .sortedObject(["type": .string("public-key"), "alg": .integer($0.rawValue)]) }),
            "timeout": timeout.map { .integer($0) },
            "excludeCredentials": descriptors(excludeCredentials),
            "authenticatorSelection": .sortedObject([
                "residentKey": .string(residentKey.rawValue), "requireResidentKey": .bool(residentKey == .required),
                "userVerification": .string(userVerification.rawValue),
            ]),
            "attestation": .string(attestation.rawValue),
            "hints": hints.isEmpty ? nil : .strings(hints),
        ]).serialized()
    }
}

/// What a relying party asks for when it starts an authentication, and later checks the response against.
public struct AuthenticationOptions: Hashable, Sendable {
    /// The random challenge the client must echo in clientDataJSON.
    public var challenge: [UInt8]
    /// The credentials that may answer; empty for a discoverable-credential (username-less) flow.
    public var allowCredentials: [[UInt8]]
    /// Whether the response must carry the UV flag.
    public var userVerification: UserVerificationRequirement
    /// The user the relying party expects, when it already knows who is signing in.
    public var expectedUserHandle: [UInt8]?
    /// How long the client should wait, in milliseconds.
    public var timeout: Int?
    /// WebAuthn Level 3 hints (§5.8.7), as on ``RegistrationOptions/hints``.
    public var hints: [String]

    /// Options with the given challenge; the rest default to a discoverable flow with UV preferred and no hints.
    public init(
        challenge: [UInt8],
        allowCredentials: [[UInt8]] = [],
        userVerification: UserVerificationRequirement = .preferred,
        expectedUserHandle: [UInt8]? = nil,
        timeout: Int? = nil,
        hints: [String] = []
    ) {
        self.challenge = challenge
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification
        self.expectedUserHandle = expectedUserHandle
        self.timeout = timeout
        self.hints = hints
    }

    /// `PublicKeyCredentialRequestOptionsJSON` (WebAuthn §5.1.9) for the RP ID `relyingPartyID`.
    /// Keys are sorted.
    public func json(relyingPartyID: String) -> [UInt8] {
        JSONValue.sortedObject([
            "challenge": .string(challenge.base64URLEncodedString),
            "timeout": timeout.map { .integer($0) },
            "rpId": .string(relyingPartyID),
            "allowCredentials": descriptors(allowCredentials),
            "userVerification": .string(userVerification.rawValue),
            "hints": hints.isEmpty ? nil : .strings(hints),
        ]).serialized()
    }
}

/// `PublicKeyCredentialDescriptorJSON` (WebAuthn §5.1.7) of each credential ID: `{"id", "type": "public-key"}`.
private func descriptors(_ ids: [[UInt8]]) -> JSONValue {
    .array(ids.map { .sortedObject(["id": .string($0.base64URLEncodedString), "type": .string("public-key")]) })
}

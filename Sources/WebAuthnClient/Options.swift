import JSON

/// `PublicKeyCredentialCreationOptionsJSON` (WebAuthn L3 §5.1.8) read as `parseCreationOptionsFromJSON` reads it:
/// base64url members decoded, defaults filled in, unknown enumeration values and unknown extensions ignored.
///
/// The text may be the dictionary itself (py_webauthn's `options_to_json`, SimpleWebAuthn's
/// `generateRegistrationOptions`) or wrapped as `{"publicKey": …}`, as some server libraries send a whole
/// `CredentialCreationOptions`.
public struct PublicKeyCredentialCreationOptions: Hashable, Sendable {
    /// `PublicKeyCredentialRpEntity` (§5.4.2).
    public struct RelyingParty: Hashable, Sendable {
        /// Nil when absent: the RP ID is then the origin's effective domain.
        public var id: String?
        public var name: String

        public init(id: String?, name: String) {
            self.id = id
            self.name = name
        }
    }

    /// `PublicKeyCredentialUserEntityJSON` (§5.4.3).
    public struct User: Hashable, Sendable {
        /// The user handle, 1 to 64 bytes (§5.1.3 step 5).
        public var id: [UInt8]
        public var name: String
        public var displayName: String

        public init(id: [UInt8], name: String, displayName: String) {
            self.id = id
            self.name = name
            self.displayName = displayName
        }
    }

    public var relyingParty: RelyingParty
    public var user: User
    public var challenge: [UInt8]
    /// `pubKeyCredParams` in the relying party's order of preference; empty means ES256 then RS256 (§5.1.3 step 10).
    public var parameters: [PublicKeyCredentialParameters]
    /// Milliseconds, as given; the engine clamps it (`CeremonyTimeout`).
    public var timeout: Int?
    public var excludeCredentials: [PublicKeyCredentialDescriptor]
    public var authenticatorSelection: AuthenticatorSelectionCriteria
    /// Known hints only, duplicates dropped, in the relying party's order.
    public var hints: [PublicKeyCredentialHint]
    public var attestation: AttestationConveyance
    public var attestationFormats: [String]
    public var extensions: ClientExtensionInputs
    /// `mediation` beside `publicKey` in a wrapped `CredentialCreationOptions`, for the caller to consider.
    public var wrapperMediation: String?

    public init(
        relyingParty: RelyingParty, user: User, challenge: [UInt8],
        parameters: [PublicKeyCredentialParameters] = [PublicKeyCredentialParameters(algorithm: -7)],
        timeout: Int? = nil, excludeCredentials: [PublicKeyCredentialDescriptor] = [],
        authenticatorSelection: AuthenticatorSelectionCriteria = AuthenticatorSelectionCriteria(),
        hints: [PublicKeyCredentialHint] = [], attestation: AttestationConveyance = .none,
        attestationFormats: [String] = [], extensions: ClientExtensionInputs = ClientExtensionInputs()
    ) {
        self.relyingParty = relyingParty
        self.user = user
        self.challenge = challenge
        self.parameters = parameters
        self.timeout = timeout
        self.excludeCredentials = excludeCredentials
        self.authenticatorSelection = authenticatorSelection
        self.hints = hints
        self.attestation = attestation
        self.attestationFormats = attestationFormats
        self.extensions = extensions
    }

    /// Parses the JSON text (at most 1 MiB).
    public init(json: [UInt8]) throws(ClientError) {
        try self.init(jsonValue: JSONValue(parsingOptions: json))
    }

    public init(jsonValue: JSONValue) throws(ClientError) {
        let (options, mediation) = try OptionsLimits.unwrap(jsonValue)
        let rp = try options.requiredDictionary("rp")
        relyingParty = RelyingParty(id: try rp.string("id"), name: try rp.requiredString("name"))
        let user = try options.requiredDictionary("user")
        self.user = User(
            id: try user.requiredBytes("id", count: 1...64), name: try user.requiredString("name"),
            displayName: try user.requiredString("displayName"))
        challenge = try options.requiredBytes("challenge", count: OptionsLimits.challengeBytes)
        var parameters: [PublicKeyCredentialParameters] = []
        let entries = try JSONDictionary.array(
            try options.required("pubKeyCredParams"), path: options.name("pubKeyCredParams"),
            maximumCount: OptionsLimits.maximumListCount)
        for entry in entries {
            let parameter = try JSONDictionary(entry.value, path: entry.path + ".")
            parameters.append(
                PublicKeyCredentialParameters(
                    type: try parameter.requiredString("type"),
                    algorithm: Int(
                        try JSONDictionary.integer(
                            try parameter.required("alg"), path: parameter.name("alg"), in: OptionsLimits.long))))
        }
        self.parameters = parameters
        timeout = try options.integer("timeout", in: OptionsLimits.unsignedLong).map { Int($0) }
        excludeCredentials = try OptionsLimits.descriptors(options, "excludeCredentials")
        if let selection = try options.dictionary("authenticatorSelection") {
            authenticatorSelection = AuthenticatorSelectionCriteria(
                attachment: try selection.string("authenticatorAttachment").flatMap(
                    AuthenticatorAttachment.init(rawValue:)),
                residentKey: try selection.string("residentKey").flatMap(ResidentKey.init(rawValue:)),
                requireResidentKey: try selection.bool("requireResidentKey") ?? false,
                userVerification: try selection.string("userVerification").flatMap(UserVerification.init(rawValue:))
                    ?? .preferred)
        } else {
            authenticatorSelection = AuthenticatorSelectionCriteria()
        }
        hints = try OptionsLimits.hints(options)
        attestation = try options.string("attestation").flatMap(AttestationConveyance.init(rawValue:)) ?? .none
        attestationFormats =
            try options.strings("attestationFormats", maximumCount: OptionsLimits.maximumListCount) ?? []
        extensions = try ClientExtensionInputs(options.dictionary("extensions"))
        wrapperMediation = mediation
    }
}

/// `PublicKeyCredentialRequestOptionsJSON` (WebAuthn L3 §5.1.9) read as `parseRequestOptionsFromJSON` reads it,
/// bare or wrapped as `{"publicKey": …}`.
public struct PublicKeyCredentialRequestOptions: Hashable, Sendable {
    public var challenge: [UInt8]
    /// Milliseconds, as given; the engine clamps it (`CeremonyTimeout`).
    public var timeout: Int?
    /// Nil when absent: the RP ID is then the origin's effective domain.
    public var relyingPartyID: String?
    public var allowCredentials: [PublicKeyCredentialDescriptor]
    public var userVerification: UserVerification
    public var hints: [PublicKeyCredentialHint]
    public var extensions: ClientExtensionInputs
    /// `mediation` beside `publicKey` in a wrapped `CredentialRequestOptions`, for the caller to consider.
    public var wrapperMediation: String?

    public init(
        challenge: [UInt8], timeout: Int? = nil, relyingPartyID: String? = nil,
        allowCredentials: [PublicKeyCredentialDescriptor] = [], userVerification: UserVerification = .preferred,
        hints: [PublicKeyCredentialHint] = [], extensions: ClientExtensionInputs = ClientExtensionInputs()
    ) {
        self.challenge = challenge
        self.timeout = timeout
        self.relyingPartyID = relyingPartyID
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification
        self.hints = hints
        self.extensions = extensions
    }

    /// Parses the JSON text (at most 1 MiB).
    public init(json: [UInt8]) throws(ClientError) {
        try self.init(jsonValue: JSONValue(parsingOptions: json))
    }

    public init(jsonValue: JSONValue) throws(ClientError) {
        let (options, mediation) = try OptionsLimits.unwrap(jsonValue)
        challenge = try options.requiredBytes("challenge", count: OptionsLimits.challengeBytes)
        timeout = try options.integer("timeout", in: OptionsLimits.unsignedLong).map { Int($0) }
        relyingPartyID = try options.string("rpId")
        allowCredentials = try OptionsLimits.descriptors(options, "allowCredentials")
        userVerification =
            try options.string("userVerification").flatMap(UserVerification.init(rawValue:)) ?? .preferred
        hints = try OptionsLimits.hints(options)
        extensions = try ClientExtensionInputs(options.dictionary("extensions"))
        wrapperMediation = mediation
    }
}

/// The bounds the options parser keeps, and the readers both option types share.
enum OptionsLimits {
    /// A challenge of up to 1024 bytes (WebAuthn asks for at least 16 and sets no upper bound; 1024 is far above
    /// what relying parties send).
    static let challengeBytes = 0...1024
    /// A credential ID is at most 1023 bytes (§4 "Credential ID").
    static let credentialIDBytes = 1...1023
    /// At most 64 descriptors or parameters, as Blink allows (`kPublicKeyCredentialDescriptorListMaxSize`).
    static let maximumListCount = 64
    /// WebIDL `unsigned long` and `long`.
    static let unsignedLong: ClosedRange<Int64> = 0...Int64(UInt32.max)
    static let long: ClosedRange<Int64> = Int64(Int32.min)...Int64(Int32.max)

    /// The dictionary itself, or the one inside `{"publicKey": …}` with the wrapper's `mediation` when it is a string.
    static func unwrap(_ value: JSONValue) throws(ClientError) -> (JSONDictionary, String?) {
        let top = try JSONDictionary(value, path: "")
        guard top.value("challenge") == nil, let inner = top.value("publicKey") else { return (top, nil) }
        let mediation: String? = if case .string(let text)? = top.value("mediation") { text } else { nil }
        return (try JSONDictionary(inner, path: "publicKey."), mediation)
    }

    /// A `sequence<PublicKeyCredentialDescriptorJSON>`; unknown transports dropped.
    static func descriptors(_ options: JSONDictionary, _ key: String) throws(ClientError)
        -> [PublicKeyCredentialDescriptor]
    {
        guard let entries = try options.array(key, maximumCount: maximumListCount) else { return [] }
        var descriptors: [PublicKeyCredentialDescriptor] = []
        for entry in entries {
            let descriptor = try JSONDictionary(entry.value, path: entry.path + ".")
            let type = try descriptor.requiredString("type")
            let id = try descriptor.requiredBytes("id", count: credentialIDBytes)
            let transports = try descriptor.strings("transports", maximumCount: 16) ?? []
            var known: [AuthenticatorTransport] = []
            for transport in transports.compactMap(AuthenticatorTransport.init(rawValue:))
            where !known.contains(transport) {
                known.append(transport)
            }
            descriptors.append(PublicKeyCredentialDescriptor(type: type, id: id, transports: known))
        }
        return descriptors
    }

    /// `hints`: known values in order, later repeats ignored (§5.8.8).
    static func hints(_ options: JSONDictionary) throws(ClientError) -> [PublicKeyCredentialHint] {
        var hints: [PublicKeyCredentialHint] = []
        for hint in (try options.strings("hints", maximumCount: 16) ?? []).compactMap(
            PublicKeyCredentialHint.init(rawValue:))
        where !hints.contains(hint) {
            hints.append(hint)
        }
        return hints
    }
}

import RelyingParty

/// The body of `POST /registration/options`:
/// `{"username", "displayName"?, "residentKey"?, "userVerification"?, "attestation"?, "hints"?}`.
public struct RegistrationOptionsRequest: Hashable, Sendable {
    /// The account name (`user.name`): 1 to 64 characters, no white space or control characters.
    public var userName: String
    /// `user.displayName`; the account name when nil.
    public var displayName: String?
    /// Default `required`: the page is about passkeys.
    public var residentKey: ResidentKeyRequirement
    /// Default `preferred`.
    public var userVerification: UserVerificationRequirement
    /// Default `none`.
    public var attestation: AttestationConveyancePreference
    /// Passed through to the options' `hints` (for example `["hybrid"]` or `["security-key"]`).
    public var hints: [String]

    /// A request with the defaults above.
    public init(
        userName: String, displayName: String? = nil, residentKey: ResidentKeyRequirement = .required,
        userVerification: UserVerificationRequirement = .preferred,
        attestation: AttestationConveyancePreference = .none, hints: [String] = []
    ) {
        self.userName = userName
        self.displayName = displayName
        self.residentKey = residentKey
        self.userVerification = userVerification
        self.attestation = attestation
        self.hints = hints
    }

    /// Reads and checks the JSON body; unknown members are ignored.
    public init(json: [UInt8]) throws(JSONBodyError) {
        let object = try JSONObject(json)
        userName = try CeremonyRequestRules.userName(object.string("username"))
        displayName = try object.optionalString("displayName").map { (text) throws(JSONBodyError) in
            try CeremonyRequestRules.displayName(text)
        }
        residentKey = try object.choice("residentKey", default: .required)
        userVerification = try object.choice("userVerification", default: .preferred)
        attestation = try object.choice("attestation", default: .none)
        hints = try CeremonyRequestRules.hints(object.optionalStrings("hints", maximumCount: 8))
    }
}

/// The body of `POST /authentication/options`: `{"username"?, "userVerification"?, "hints"?}`.
public struct AuthenticationOptionsRequest: Hashable, Sendable {
    /// When set, `allowCredentials` lists this account's credentials; when nil, the list is empty and the
    /// authenticator offers its discoverable credentials.
    public var userName: String?
    /// Default `preferred`.
    public var userVerification: UserVerificationRequirement
    /// Passed through to the options' `hints`.
    public var hints: [String]

    /// A request with the defaults above.
    public init(
        userName: String? = nil, userVerification: UserVerificationRequirement = .preferred, hints: [String] = []
    ) {
        self.userName = userName
        self.userVerification = userVerification
        self.hints = hints
    }

    /// Reads and checks the JSON body; unknown members are ignored. An empty `username` means none.
    public init(json: [UInt8]) throws(JSONBodyError) {
        let object = try JSONObject(json)
        let name = try object.optionalString("username")
        userName = try name.flatMap { (text) throws(JSONBodyError) in
            text.isEmpty ? nil : try CeremonyRequestRules.userName(text)
        }
        userVerification = try object.choice("userVerification", default: .preferred)
        hints = try CeremonyRequestRules.hints(object.optionalStrings("hints", maximumCount: 8))
    }
}

/// The body of `POST /client-result`: a failure the browser reported before anything reached the relying
/// party, such as `{"ceremony": "registration", "name": "InvalidStateError", "message": "…"}`.
public struct ClientResult: Hashable, Sendable {
    /// `registration` or `authentication` (a short name of letters, digits and `-`).
    public var ceremony: String
    /// The `DOMException` name (or another error's name).
    public var name: String
    /// The error's message, at most 1,000 characters.
    public var message: String

    /// A report from its parts.
    public init(ceremony: String, name: String, message: String) {
        self.ceremony = ceremony
        self.name = name
        self.message = message
    }

    /// Reads and checks the JSON body.
    public init(json: [UInt8]) throws(JSONBodyError) {
        let object = try JSONObject(json)
        ceremony = try object.string("ceremony")
        name = try object.string("name")
        message = try object.optionalString("message") ?? ""
        guard JSONObject.isToken(ceremony) else { throw .outOfBounds("ceremony", reason: "not a ceremony name") }
        guard JSONObject.isToken(name) else { throw .outOfBounds("name", reason: "not an error name") }
        guard message.count <= 1000 else { throw .outOfBounds("message", reason: "longer than 1,000 characters") }
    }
}

/// The bounds every request member is held to, so that values can be printed on one line and kept in the
/// state file.
enum CeremonyRequestRules {
    static func userName(_ text: String) throws(JSONBodyError) -> String {
        guard (1...64).contains(text.count) else {
            throw .outOfBounds("username", reason: "must be 1 to 64 characters")
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.isWhitespace || isControl($0) }) else {
            throw .outOfBounds("username", reason: "must not contain white space or control characters")
        }
        return text
    }

    static func displayName(_ text: String) throws(JSONBodyError) -> String {
        guard text.count <= 64 else { throw .outOfBounds("displayName", reason: "longer than 64 characters") }
        guard !text.unicodeScalars.contains(where: isControl) else {
            throw .outOfBounds("displayName", reason: "must not contain control characters")
        }
        return text
    }

    static func hints(_ hints: [String]) throws(JSONBodyError) -> [String] {
        for hint in hints where !JSONObject.isToken(hint) {
            throw .outOfBounds("hints", reason: "\"\(hint)\" is not a hint name")
        }
        return hints
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned: true
        default: false
        }
    }
}

extension JSONObject {
    /// A member that must be one of an enumeration's raw values; `fallback` when absent or null.
    func choice<Value: RawRepresentable & CaseIterable>(_ key: String, default fallback: Value)
        throws(JSONBodyError) -> Value where Value.RawValue == String
    {
        guard let text = try optionalString(key) else { return fallback }
        guard let value = Value(rawValue: text) else {
            let allowed = Value.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            throw .outOfBounds(key, reason: "must be one of \(allowed)")
        }
        return value
    }
}

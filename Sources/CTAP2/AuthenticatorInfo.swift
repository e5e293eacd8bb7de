import CBOR

/// An authenticatorGetInfo response as a platform reads it (CTAP 2.1 §6.4): what a security key says it can do.
///
/// Unknown keys are ignored, and so are options with values that are not booleans' names; a known key with a value
/// of the wrong type is CTAP2_ERR_CBOR_UNEXPECTED_TYPE, as in requests. The response is read leniently (CBOR need
/// not be in canonical order), since the platform cannot fix a key's encoder.
public struct AuthenticatorInfo: Hashable, Sendable {
    /// 0x01: the protocol versions, such as `FIDO_2_0`, `FIDO_2_1`, `U2F_V2`.
    public var versions: [String]
    /// 0x02: the extensions the key implements.
    public var extensions: [String]
    /// 0x03: the 16-byte AAGUID.
    public var aaguid: [UInt8]
    /// 0x04: the options, such as `rk`, `up`, `uv`, `clientPin`, `pinUvAuthToken`, `alwaysUv`, `makeCredUvNotRqd`.
    public var options: [String: Bool]
    /// 0x05: the longest message the key accepts.
    public var maximumMessageSize: Int?
    /// 0x06: the PIN/UV auth protocols, most preferred first.
    public var pinUvAuthProtocols: [PinUvAuthProtocol]
    /// 0x07: the most credential descriptors one allow or exclude list may carry.
    public var maximumCredentialCountInList: Int?
    /// 0x08: the longest credential ID the key makes.
    public var maximumCredentialIDLength: Int?
    /// 0x09: the transports, such as `usb` or `nfc`.
    public var transports: [String]
    /// 0x0A: the `public-key` algorithms, such as -7 for ES256; nil when getInfo does not say (CTAP 2.0 keys).
    public var algorithms: [Int]?
    /// 0x0C: whether the PIN must be changed before it can be used.
    public var forcePINChange: Bool?
    /// 0x0D: the shortest PIN the key accepts, in code points.
    public var minimumPINLength: Int?
    /// 0x0E: the firmware version.
    public var firmwareVersion: Int?
    /// 0x0F: the longest credBlob the key stores.
    public var maximumCredentialBlobLength: Int?

    /// An answer made up in code, for tests and for authenticators whose getInfo the platform builds itself.
    public init(
        versions: [String] = ["FIDO_2_0"], extensions: [String] = [],
        aaguid: [UInt8] = [UInt8](repeating: 0, count: 16),
        options: [String: Bool] = [:], pinUvAuthProtocols: [PinUvAuthProtocol] = [], transports: [String] = [],
        algorithms: [Int]? = nil
    ) {
        self.versions = versions
        self.extensions = extensions
        self.aaguid = aaguid
        self.options = options
        self.pinUvAuthProtocols = pinUvAuthProtocols
        self.transports = transports
        self.algorithms = algorithms
    }

    /// Reads a getInfo response: the status byte, then the CBOR map. A non-zero status is thrown.
    public init(ctapResponse: [UInt8]) throws(CTAPError) {
        try self.init(cbor: CTAPClient.lenientBody(of: ctapResponse))
    }

    /// Reads the CBOR map of a getInfo response.
    public init(cbor: CBORValue) throws(CTAPError) {
        let map = try cbor.parameters()
        versions = try Self.texts(map.required(1))
        extensions = try map.optional(2).map(Self.texts) ?? []
        aaguid = try map.required(3).bytes()
        guard aaguid.count == 16 else { throw .invalidLength }
        var options: [String: Bool] = [:]
        for (key, value) in try map.optional(4)?.parameters().entries ?? [:] {
            guard let name = key.textValue, let enabled = value.boolValue else { continue }
            options[name] = enabled
        }
        self.options = options
        maximumMessageSize = try map.optional(5)?.int()
        pinUvAuthProtocols = try (map.optional(6)?.array() ?? []).map { value throws(CTAPError) in
            PinUvAuthProtocol(rawValue: try value.int())
        }
        maximumCredentialCountInList = try map.optional(7)?.int()
        maximumCredentialIDLength = try map.optional(8)?.int()
        transports = try map.optional(9).map(Self.texts) ?? []
        if let list = map.optional(0x0A) {
            var algorithms: [Int] = []
            for element in try list.array() {
                let entry = try element.parameters()
                guard try entry.optional("type")?.text() == "public-key",
                    let algorithm = try entry.optional("alg")?.int()
                else { continue }
                algorithms.append(algorithm)
            }
            self.algorithms = algorithms
        } else {
            algorithms = nil
        }
        forcePINChange = try map.optional(0x0C)?.bool()
        minimumPINLength = try map.optional(0x0D)?.int()
        firmwareVersion = try map.optional(0x0E)?.int()
        maximumCredentialBlobLength = try map.optional(0x0F)?.int()
    }

    private static func texts(_ value: CBORValue) throws(CTAPError) -> [String] {
        try value.array().map { element throws(CTAPError) in try element.text() }
    }

    // MARK: What a platform asks

    /// The `clientPin` option: `true` when a PIN is set, `false` when one can be but is not, `nil` when the key has
    /// no PIN at all.
    public var clientPIN: Bool? { options["clientPin"] }

    /// Whether a PIN is set (the `clientPin` option is true).
    public var hasPIN: Bool { clientPIN == true }

    /// Whether the user can be verified at all: built-in verification or a PIN that is set.
    public var canVerifyUser: Bool { hasBuiltInUserVerification || hasPIN }

    /// The `rk` option: the key stores discoverable credentials.
    public var supportsDiscoverableCredentials: Bool { options["rk"] == true }

    /// The `largeBlobs` option: the key keeps a large-blob array.
    public var supportsLargeBlobs: Bool { options["largeBlobs"] == true }

    /// Whether `name` is among the extensions the key lists.
    public func supports(extension name: String) -> Bool { extensions.contains(name) }

    /// Whether the key verifies users itself (the `uv` option is true: a fingerprint reader, or this package's store
    /// passphrase).
    public var hasBuiltInUserVerification: Bool { options["uv"] == true }

    /// Whether the key issues tokens with permissions (getPinUvAuthTokenUsingPinWithPermissions, CTAP 2.1); without
    /// it a platform uses getPinToken (CTAP 2.0).
    public var supportsPermissionTokens: Bool { options["pinUvAuthToken"] == true }

    /// Whether the key wants user verification for every makeCredential and getAssertion.
    public var alwaysRequiresUserVerification: Bool { options["alwaysUv"] == true }

    /// Whether the key makes non-discoverable credentials without user verification even with a PIN set.
    public var makesCredentialsWithoutUserVerification: Bool { options["makeCredUvNotRqd"] == true }

    /// The PIN/UV auth protocol to use: two when the key lists it, else one; one for a CTAP 2.0 key that lists none.
    /// `nil` when the key lists only protocols this package does not implement.
    public var preferredPinUvAuthProtocol: PinUvAuthProtocol? {
        if pinUvAuthProtocols.isEmpty { return .one }
        return PinUvAuthProtocol.supported.first { pinUvAuthProtocols.contains($0) }
    }
}

import CBOR
import CTAP2

/// An authenticatorGetInfo response (CTAP 2.1 §6.4) as a platform reads it to decide what to ask for: discoverable
/// credentials, user verification, PIN protocols, extensions and list limits. Unknown keys are ignored; a known key
/// with a value of the wrong type makes the whole answer invalid, as it would for a request.
public struct AuthenticatorInfo: Hashable, Sendable {
    public var versions: [String]
    public var extensions: [String]
    public var aaguid: [UInt8]
    /// The options map (`rk`, `up`, `uv`, `clientPin`, `pinUvAuthToken`, `makeCredUvNotRqd`, `alwaysUv`, …).
    public var options: [String: Bool]
    public var maximumMessageSize: Int?
    public var pinUvAuthProtocols: [Int]
    public var maximumCredentialCountInList: Int?
    public var maximumCredentialIDLength: Int?
    public var transports: [String]
    /// The `public-key` algorithms it supports; nil when getInfo does not say (CTAP 2.0 authenticators).
    public var algorithms: [Int]?
    public var maximumCredentialBlobLength: Int?

    public init(
        versions: [String] = ["FIDO_2_0"], extensions: [String] = [],
        aaguid: [UInt8] = [UInt8](repeating: 0, count: 16),
        options: [String: Bool] = [:], pinUvAuthProtocols: [Int] = [], transports: [String] = [],
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

    /// Reads a getInfo response: the status byte, then the CBOR map. An error status is thrown.
    public init(response: [UInt8]) throws(CTAPError) {
        guard let status = response.first else { throw .invalidLength }
        guard status == 0 else { throw CTAPError(rawValue: status) }
        let body: CBORValue
        do {
            body = try CBORDecoder(requiresCanonicalForm: false).decode(response.dropFirst())
        } catch {
            throw .invalidCBOR
        }
        try self.init(cbor: body)
    }

    /// Reads the getInfo map (as the hybrid handshake carries it, without a status byte).
    public init(cbor: CBORValue) throws(CTAPError) {
        guard let map = cbor.mapValue else { throw .cborUnexpectedType }
        func texts(_ key: CBORValue) throws(CTAPError) -> [String]? {
            guard let value = map[key] else { return nil }
            guard let elements = value.arrayValue else { throw .cborUnexpectedType }
            var texts: [String] = []
            for element in elements {
                guard let text = element.textValue else { throw .cborUnexpectedType }
                texts.append(text)
            }
            return texts
        }
        func integer(_ key: CBORValue) throws(CTAPError) -> Int? {
            guard let value = map[key] else { return nil }
            guard let number = value.intValue else { throw .cborUnexpectedType }
            return number
        }
        guard let versions = try texts(1) else { throw .missingParameter }
        self.versions = versions
        extensions = try texts(2) ?? []
        guard let aaguid = map[3]?.bytesValue, aaguid.count == 16 else { throw .missingParameter }
        self.aaguid = aaguid
        var options: [String: Bool] = [:]
        if let value = map[4] {
            guard let entries = value.mapValue else { throw .cborUnexpectedType }
            for (key, flag) in entries {
                guard let name = key.textValue, let flag = flag.boolValue else { throw .cborUnexpectedType }
                options[name] = flag
            }
        }
        self.options = options
        maximumMessageSize = try integer(5)
        var protocols: [Int] = []
        if let value = map[6] {
            guard let elements = value.arrayValue else { throw .cborUnexpectedType }
            for element in elements {
                guard let number = element.intValue else { throw .cborUnexpectedType }
                protocols.append(number)
            }
        }
        pinUvAuthProtocols = protocols
        maximumCredentialCountInList = try integer(7)
        maximumCredentialIDLength = try integer(8)
        transports = try texts(9) ?? []
        if let value = map[10] {
            guard let elements = value.arrayValue else { throw .cborUnexpectedType }
            var algorithms: [Int] = []
            for element in elements {
                guard let entry = element.mapValue else { throw .cborUnexpectedType }
                if entry["type"]?.textValue == "public-key", let algorithm = entry["alg"]?.intValue {
                    algorithms.append(algorithm)
                }
            }
            self.algorithms = algorithms
        } else {
            algorithms = nil
        }
        maximumCredentialBlobLength = try integer(0x0F)
    }

    /// The option `rk`: it can store discoverable credentials.
    public var supportsDiscoverableCredentials: Bool { options["rk"] == true }
    /// The option `uv` true: built-in user verification is configured.
    public var hasBuiltInUserVerification: Bool { options["uv"] == true }
    /// The option `clientPin` true: a PIN is set.
    public var hasPIN: Bool { options["clientPin"] == true }
    /// Whether the user can be verified at all: built-in verification or a PIN.
    public var canVerifyUser: Bool { hasBuiltInUserVerification || hasPIN }
    /// `makeCredUvNotRqd`: a non-discoverable credential can be made without user verification.
    public var makeCredentialWithoutUserVerification: Bool { options["makeCredUvNotRqd"] == true }
    /// `pinUvAuthToken`: getPinUvAuthTokenUsingPinWithPermissions is available (CTAP 2.1).
    public var supportsPermissionTokens: Bool { options["pinUvAuthToken"] == true }
    /// `largeBlobs`: the large-blob array is supported.
    public var supportsLargeBlobs: Bool { options["largeBlobs"] == true }

    /// Whether `extension` is listed.
    public func supports(extension name: String) -> Bool { extensions.contains(name) }

    /// The PIN/UV auth protocol to use: the first of two and one that the authenticator lists.
    public var preferredPINProtocol: PinUvAuthProtocol? {
        [PinUvAuthProtocol.two, .one].first { pinUvAuthProtocols.contains($0.rawValue) }
    }
}

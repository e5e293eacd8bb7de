import Basics
import JSON

// The JSON form of CXF: member names as the spec spells them, byte strings as unpadded base64url, times as whole
// seconds. Reading is strict where the spec is (required members, `type` on every credential, major version 1) and
// keeps what it does not model.

extension CXF.Header {
    /// Reads a CXF document from JSON text.
    public init(jsonBytes: [UInt8]) throws(ExchangeError) {
        try self.init(json: ExchangeJSON.parse(jsonBytes, what: "the CXF document"))
    }

    public init(json: JSONValue) throws(ExchangeError) {
        let fields = try JSONFields(json, path: "")
        let version = try JSONFields(fields.required("version"), path: "version")
        self.version = CXF.Version(
            major: try version.requiredUnsigned("major"), minor: try version.requiredUnsigned("minor"))
        guard self.version.major == CXF.version.major else {
            throw ExchangeError(
                .unsupportedVersion,
                "the CXF document is version \(self.version); this program reads version \(CXF.version.major).x")
        }
        exporterRpId = try fields.requiredString("exporterRpId")
        exporterDisplayName = try fields.requiredString("exporterDisplayName")
        timestamp = try fields.requiredUnsigned("timestamp")
        accounts = try fields.requiredArray("accounts").enumerated().map { (index, value) throws(ExchangeError) in
            try CXF.Account(json: value, path: "accounts[\(index)]")
        }
    }

    /// The document as JSON: members in the spec's order.
    public var json: JSONValue {
        JSONValue.object(omittingNil: [
            (
                "version",
                .object([JSONMember("major", .integer(version.major)), JSONMember("minor", .integer(version.minor))])
            ),
            ("exporterRpId", .string(exporterRpId)),
            ("exporterDisplayName", .string(exporterDisplayName)),
            ("timestamp", .integer(timestamp)),
            ("accounts", .array(accounts.map(\.json))),
        ])
    }

    /// The document as compact JSON text (UTF-8).
    public var jsonBytes: [UInt8] { json.serialized() }
}

extension CXF.Account {
    init(json: JSONValue, path: String) throws(ExchangeError) {
        let fields = try JSONFields(json, path: path)
        id = try fields.requiredBytes("id")
        username = try fields.requiredString("username")
        email = try fields.requiredString("email")
        fullName = try fields.string("fullName")
        collections = try fields.array("collections") ?? []
        items = try fields.requiredArray("items").enumerated().map { (index, value) throws(ExchangeError) in
            try CXF.Item(json: value, path: fields.name("items[\(index)]"))
        }
        extensions = try fields.array("extensions")
    }

    var json: JSONValue {
        JSONValue.object(omittingNil: [
            ("id", .bytes(id)),
            ("username", .string(username)),
            ("email", .string(email)),
            ("fullName", fullName.map(JSONValue.string)),
            ("collections", .array(collections)),
            ("items", .array(items.map(\.json))),
            ("extensions", extensions.map(JSONValue.array)),
        ])
    }
}

extension CXF.Item {
    init(json: JSONValue, path: String) throws(ExchangeError) {
        let fields = try JSONFields(json, path: path)
        id = try fields.requiredBytes("id")
        creationAt = try fields.unsigned("creationAt")
        modifiedAt = try fields.unsigned("modifiedAt")
        title = try fields.requiredString("title")
        subtitle = try fields.string("subtitle")
        favorite = try fields.bool("favorite")
        scope = fields.value("scope")
        credentials = try fields.requiredArray("credentials").enumerated().map {
            (index, value) throws(ExchangeError) in
            try CXF.Credential(json: value, path: fields.name("credentials[\(index)]"))
        }
        tags = try fields.array("tags")?.enumerated().map { (index, value) throws(ExchangeError) -> String in
            guard case .string(let tag) = value else {
                throw ExchangeError(.invalidValue, "\(fields.name("tags[\(index)]")) must be a string")
            }
            return tag
        }
        extensions = try fields.array("extensions")
    }

    var json: JSONValue {
        JSONValue.object(omittingNil: [
            ("id", .bytes(id)),
            ("creationAt", creationAt.map { .integer($0) }),
            ("modifiedAt", modifiedAt.map { .integer($0) }),
            ("title", .string(title)),
            ("subtitle", subtitle.map(JSONValue.string)),
            ("favorite", favorite.map(JSONValue.bool)),
            ("scope", scope),
            ("credentials", .array(credentials.map(\.json))),
            ("tags", tags.map { .array($0.map(JSONValue.string)) }),
            ("extensions", extensions.map(JSONValue.array)),
        ])
    }
}

extension CXF.Credential {
    /// A credential by its `type`: a missing `type` is an error; a type other than `passkey` is kept as it is.
    init(json: JSONValue, path: String) throws(ExchangeError) {
        let fields = try JSONFields(json, path: path)
        let type = try fields.requiredString("type")
        switch type {
        case CXF.Passkey.type:
            self = .passkey(try CXF.Passkey(fields: fields))
        case CXF.Credential.noteType:
            // A note whose content is not a string field is kept as an unknown credential: counted as skipped.
            guard case .object(let members)? = fields.value("content"),
                case .string(let value)? = members.first(where: { $0.key == "value" })?.value,
                members.first(where: { $0.key == "fieldType" }).map({ $0.value == .string("string") }) ?? true
            else {
                self = .other(type: type, json)
                return
            }
            self = .note(value)
        case CXF.BasicAuth.type:
            // Fields that are not string fields keep the credential as an unknown one: counted and named as skipped.
            guard let username = Self.editableString(fields.value("username")),
                let password = Self.editableString(fields.value("password"))
            else {
                self = .other(type: type, json)
                return
            }
            self = .basicAuth(CXF.BasicAuth(username: username, password: password))
        case CXF.TOTP.type:
            guard let totp = try CXF.TOTP(fields: fields) else {
                self = .other(type: type, json)
                return
            }
            self = .totp(totp)
        default:
            self = .other(type: type, json)
        }
    }

    /// An editable field's text (`{"fieldType": "string" | "concealed-string", "value": …}`): `.some(nil)` when the
    /// member is absent, nil when it is there but not such a field.
    static func editableString(_ value: JSONValue?) -> String?? {
        guard let value else { return .some(nil) }
        guard case .object(let members) = value,
            case .string(let text)? = members.first(where: { $0.key == "value" })?.value,
            members.first(where: { $0.key == "fieldType" }).map({
                [.string("string"), .string("concealed-string"), .string("email")].contains($0.value)
            }) ?? true
        else { return nil }
        return .some(text)
    }

    static func editableField(_ text: String, type: String) -> JSONValue {
        .object([.init("fieldType", .string(type)), .init("value", .string(text))])
    }

    var json: JSONValue {
        switch self {
        case .passkey(let passkey): passkey.json
        case .note(let text):
            .object([
                .init("type", .string(CXF.Credential.noteType)),
                .init("content", .object([.init("fieldType", .string("string")), .init("value", .string(text))])),
            ])
        case .basicAuth(let login):
            JSONValue.object(omittingNil: [
                ("type", .string(CXF.BasicAuth.type)),
                ("username", login.username.map { Self.editableField($0, type: "string") }),
                ("password", login.password.map { Self.editableField($0, type: "concealed-string") }),
            ])
        case .totp(let totp): totp.json
        case .other(_, let json): json
        }
    }
}

extension CXF.TOTP {
    /// Reads a `totp` credential's members (its `type` already checked); nil when it is one this program cannot use
    /// (an unknown algorithm, digits or period out of range, a secret that is not base32): the caller keeps it as
    /// an unknown credential, counted and named as skipped. A member of the wrong JSON type is an error.
    init?(fields: JSONFields) throws(ExchangeError) {
        let secretText = try fields.requiredString("secret")
        let period = try fields.requiredUnsigned("period")
        let digits = try fields.requiredUnsigned("digits")
        let algorithmName = try fields.requiredString("algorithm")
        let username = try fields.string("username")
        let issuer = try fields.string("issuer")
        guard let algorithm = OneTimeCode.Algorithm(name: algorithmName),
            let secret = try? OTPAuthURI.secret(secretText)
        else { return nil }
        let parameters = OneTimeCode.Parameters(
            algorithm: algorithm, digits: Int(clamping: digits), period: Int(clamping: period))
        guard parameters.isValid else { return nil }
        self.init(secret: secret, parameters: parameters, username: username, issuer: issuer)
    }

    /// The credential as CXF JSON: the secret in base32 without padding, the algorithm in lower case.
    var json: JSONValue {
        JSONValue.object(omittingNil: [
            ("type", .string(Self.type)),
            ("secret", .string(secret.base32EncodedString)),
            ("period", .integer(UInt64(parameters.period))),
            ("digits", .integer(UInt64(parameters.digits))),
            ("username", username.map(JSONValue.string)),
            ("algorithm", .string(parameters.algorithm.rawValue.lowercased())),
            ("issuer", issuer.map(JSONValue.string)),
        ])
    }
}

extension CXF.Passkey {
    /// Reads a `passkey` credential's members (its `type` already checked).
    init(fields: JSONFields) throws(ExchangeError) {
        credentialID = try fields.requiredBytes("credentialId")
        rpID = try fields.requiredString("rpId")
        username = try fields.requiredString("username")
        userDisplayName = try fields.requiredString("userDisplayName")
        userHandle = try fields.requiredBytes("userHandle")
        key = try fields.requiredBytes("key")
        fido2Extensions = try fields.value("fido2Extensions").map { (value) throws(ExchangeError) in
            try CXF.FIDO2Extensions(json: value, path: fields.name("fido2Extensions"))
        }
    }

    /// Reads a `passkey` credential on its own, for example one shared alone: `type` must be `passkey`.
    public init(json: JSONValue, path: String = "") throws(ExchangeError) {
        let fields = try JSONFields(json, path: path)
        let type = try fields.requiredString("type")
        guard type == Self.type else {
            throw ExchangeError(.invalidValue, "\(fields.name("type")) is \(type.debugDescription), not \"passkey\"")
        }
        try self.init(fields: fields)
    }

    /// The credential as CXF JSON, `type` first.
    public var json: JSONValue {
        JSONValue.object(omittingNil: [
            ("type", .string(Self.type)),
            ("credentialId", .bytes(credentialID)),
            ("rpId", .string(rpID)),
            ("username", .string(username)),
            ("userDisplayName", .string(userDisplayName)),
            ("userHandle", .bytes(userHandle)),
            ("key", .bytes(key)),
            ("fido2Extensions", fido2Extensions.flatMap { $0.isEmpty ? nil : $0.json }),
        ])
    }
}

extension CXF.FIDO2Extensions {
    init(json: JSONValue, path: String) throws(ExchangeError) {
        let fields = try JSONFields(json, path: path)
        hmacCredentials = try fields.value("hmacCredentials").map { (value) throws(ExchangeError) in
            let hmac = try JSONFields(value, path: fields.name("hmacCredentials"))
            return CXF.HMACCredentials(
                algorithm: try hmac.requiredString("algorithm"), credWithUV: try hmac.requiredBytes("credWithUV"),
                credWithoutUV: try hmac.requiredBytes("credWithoutUV"))
        }
        credBlob = try fields.bytes("credBlob")
        largeBlob = try fields.value("largeBlob").map { (value) throws(ExchangeError) in
            let blob = try JSONFields(value, path: fields.name("largeBlob"))
            return CXF.LargeBlob(
                uncompressedSize: try blob.requiredUnsigned("uncompressedSize"), data: try blob.requiredBytes("data"))
        }
        payments = try fields.bool("payments")
    }

    var json: JSONValue {
        JSONValue.object(omittingNil: [
            (
                "hmacCredentials",
                hmacCredentials.map { hmac in
                    .object([
                        JSONMember("algorithm", .string(hmac.algorithm)),
                        JSONMember("credWithUV", .bytes(hmac.credWithUV)),
                        JSONMember("credWithoutUV", .bytes(hmac.credWithoutUV)),
                    ])
                }
            ),
            ("credBlob", credBlob.map(JSONValue.bytes)),
            (
                "largeBlob",
                largeBlob.map { blob in
                    .object([
                        JSONMember("uncompressedSize", .integer(blob.uncompressedSize)),
                        JSONMember("data", .bytes(blob.data)),
                    ])
                }
            ),
            ("payments", payments.map(JSONValue.bool)),
        ])
    }
}

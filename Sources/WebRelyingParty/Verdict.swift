import Basics
import JSON
import RelyingParty
import WebAuthn

/// The two WebAuthn ceremonies.
public enum CeremonyKind: String, Hashable, Sendable, CaseIterable {
    case registration
    case authentication
}

/// A response the relying party verified: a registration or an authentication (the `Verdict` case says which).
public struct AcceptedResponse: Hashable, Sendable {
    /// The account the credential is registered to.
    public var userName: String
    /// The record now in the state: new, or after an authentication with its new signature counter and backup state.
    public var credential: CredentialRecord
    public var userVerified: Bool
    /// `platform` or `cross-platform` when the browser said.
    public var authenticatorAttachment: String?
    /// A registration made by an automatic passkey upgrade (options from a password sign-in, `create()` with
    /// `mediation: "conditional"`).
    public var upgrade: Bool
    /// The UP flag (a registration by an upgrade may come without it).
    public var userPresent: Bool

    public init(
        userName: String, credential: CredentialRecord, userVerified: Bool, authenticatorAttachment: String?,
        upgrade: Bool = false, userPresent: Bool = true
    ) {
        self.userName = userName
        self.credential = credential
        self.userVerified = userVerified
        self.authenticatorAttachment = authenticatorAttachment
        self.upgrade = upgrade
        self.userPresent = userPresent
    }
}

/// What the relying party decided about one response, or what the browser reported instead of one.
public enum Verdict: Hashable, Sendable {
    case registered(AcceptedResponse)
    case authenticated(AcceptedResponse)
    /// The response was refused; nothing changed. The account name is there when the ceremony named one.
    case refused(CeremonyKind, WebRelyingPartyError, userName: String?)
    /// The browser's own failure, reported by the page (`POST /client-result`).
    case clientError(ClientResult)
    /// A signed-in browser deleted one of its user's passkeys (`POST /credentials/delete`).
    case deleted(userName: String, credentialID: [UInt8])
    /// A new account with a password (`POST /password/sign-up`).
    case passwordSignedUp(userName: String)
    /// A password sign-in (`POST /password/sign-in`); the answer carries the upgrade's registration options.
    case passwordSignedIn(userName: String)
    /// A password sign-up or sign-in refused; the user name is not printed (a wrong one may be a password).
    case passwordRefused(ceremony: String, WebRelyingPartyError)
    /// A signed-in browser changed its account's display name (`POST /account/rename`).
    case renamed(userName: String, displayName: String)

    /// One line for standard output, `key=value` fields after a fixed prefix; values never hold white space,
    /// except the last field of a refusal (`reason=`) or a client error (`message=`), which runs to the end:
    ///
    /// ```
    /// verdict registration ok user=alice credential=<base64url> uv=true transports=usb attachment=cross-platform attestation=none aaguid=<…>
    /// verdict authentication ok user=alice credential=<base64url> uv=true signCount=0 attachment=cross-platform
    /// verdict registration refused code=challengeReplayed user=alice reason=the challenge was already used …
    /// verdict client error ceremony=registration name=InvalidStateError message=…
    /// verdict deletion ok user=alice credential=<base64url>
    /// verdict registration ok user=alice … alg=EdDSA upgrade=true up=false
    /// verdict password sign-up ok user=alice
    /// verdict password sign-in ok user=alice
    /// verdict password sign-in refused code=signInFailed reason=the user name or the password is wrong
    /// verdict rename ok user=alice displayName=Alice%20Liddell
    /// ```
    public var line: String {
        switch self {
        case .registered(let verdict):
            let credential = verdict.credential
            return "verdict registration ok user=\(Self.field(verdict.userName)) "
                + "credential=\(credential.id.base64URLEncodedString) uv=\(verdict.userVerified) "
                + "transports=\(credential.transports.map(Self.field).joined(separator: ",")) "
                + "attachment=\(Self.field(verdict.authenticatorAttachment ?? "unknown")) "
                + "attestation=\(Self.field(credential.attestationFormat)) aaguid=\(credential.aaguid) "
                + "alg=\(credential.publicKey.algorithm)"
                + (verdict.upgrade ? " upgrade=true up=\(verdict.userPresent)" : "")
        case .authenticated(let verdict):
            return "verdict authentication ok user=\(Self.field(verdict.userName)) "
                + "credential=\(verdict.credential.id.base64URLEncodedString) uv=\(verdict.userVerified) "
                + "signCount=\(verdict.credential.signCount) "
                + "attachment=\(Self.field(verdict.authenticatorAttachment ?? "unknown"))"
        case .refused(let ceremony, let error, let userName):
            let user = userName.map { " user=\(Self.field($0))" } ?? ""
            return "verdict \(ceremony.rawValue) refused code=\(Self.field(error.code.rawValue))\(user) "
                + "reason=\(Self.text(error.message))"
        case .clientError(let result):
            return "verdict client error ceremony=\(Self.field(result.ceremony)) name=\(Self.field(result.name)) "
                + "message=\(Self.text(result.message))"
        case .deleted(let userName, let credentialID):
            return "verdict deletion ok user=\(Self.field(userName)) credential=\(credentialID.base64URLEncodedString)"
        case .passwordSignedUp(let userName):
            return "verdict password sign-up ok user=\(Self.field(userName))"
        case .passwordSignedIn(let userName):
            return "verdict password sign-in ok user=\(Self.field(userName))"
        case .passwordRefused(let ceremony, let error):
            return "verdict password \(ceremony) refused code=\(Self.field(error.code.rawValue)) "
                + "reason=\(Self.text(error.message))"
        case .renamed(let userName, let displayName):
            return "verdict rename ok user=\(Self.field(userName)) displayName=\(Self.field(displayName))"
        }
    }

    /// The JSON answer: for a verified response `{"verdict": "ok", "ceremony", "user", "credentialID",
    /// "userVerified", …}`; for a refusal `{"verdict": "refused", "error": code, "message", "ceremony", "user"?}`.
    public var json: [UInt8] { jsonValue.serialized() }

    /// ``json`` before it is written, so that an answer can carry more members (the decoded response).
    var jsonValue: JSONValue {
        switch self {
        case .registered(let verdict):
            return Self.accepted(verdict, ceremony: .registration)
        case .authenticated(let verdict):
            return Self.accepted(verdict, ceremony: .authentication)
        case .refused(let ceremony, let error, let userName):
            return errorJSONValue(error, ceremony: ceremony, userName: userName)
        case .clientError(let result):
            return JSONValue.sortedObject(["recorded": .string(result.ceremony)])
        case .deleted(let userName, let credentialID):
            return JSONValue.sortedObject([
                "deleted": .string(credentialID.base64URLEncodedString), "user": .string(userName),
            ])
        case .passwordSignedUp(let userName):
            return .sortedObject([
                "verdict": .string("ok"), "ceremony": .string("password-sign-up"), "user": .string(userName),
            ])
        case .passwordSignedIn(let userName):
            return .sortedObject([
                "verdict": .string("ok"), "ceremony": .string("password-sign-in"), "user": .string(userName),
            ])
        case .passwordRefused(let ceremony, let error):
            return .sortedObject([
                "verdict": .string("refused"), "ceremony": .string("password-\(ceremony)"),
                "error": .string(error.code.rawValue), "message": .string(error.message),
            ])
        case .renamed(let userName, let displayName):
            return .sortedObject(["renamed": .string(userName), "displayName": .string(displayName)])
        }
    }

    /// A verified response's answer; a registration's also names its attestation.
    private static func accepted(_ verdict: AcceptedResponse, ceremony: CeremonyKind) -> JSONValue {
        let credential = verdict.credential
        let registration = ceremony == .registration
        return .sortedObject([
            "verdict": .string("ok"), "ceremony": .string(ceremony.rawValue), "user": .string(verdict.userName),
            "credentialId": .string(credential.id.base64URLEncodedString), "userVerified": .bool(verdict.userVerified),
            "signCount": .integer(credential.signCount), "transports": .strings(credential.transports),
            "authenticatorAttachment": verdict.authenticatorAttachment.map { .string($0) },
            "attestationFormat": registration ? .string(credential.attestationFormat) : nil,
            "attestationType": registration ? .string(credential.attestationType.rawValue) : nil,
            "aaguid": registration ? .string(credential.aaguid.description) : nil,
            "algorithm": registration ? .string(credential.publicKey.algorithm.description) : nil,
            "backupEligible": .bool(credential.backupEligible), "backupState": .bool(credential.backupState),
            "upgrade": registration ? .bool(verdict.upgrade) : nil,
            "userPresent": .bool(verdict.userPresent),
        ])
    }

    /// The HTTP status of the answer.
    public var status: Int {
        switch self {
        case .refused(_, let error, _), .passwordRefused(_, let error): return error.status
        default: return 200
        }
    }

    /// A value as it appears in a line: white space, control characters, `%` and `,` percent-encoded.
    static func field(_ value: String) -> String {
        var result = ""
        for scalar in value.unicodeScalars {
            if scalar.properties.isWhitespace || CeremonyRequestRules.isControl(scalar) || scalar == "%"
                || scalar == ","
            {
                for byte in String(scalar).utf8 {
                    result += "%" + String(hexDigits[Int(byte >> 4)]) + String(hexDigits[Int(byte & 0x0F)])
                }
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result.isEmpty ? "-" : result
    }

    /// Free text at the end of a line: line breaks and other control characters become spaces.
    static func text(_ value: String) -> String {
        String(String.UnicodeScalarView(value.unicodeScalars.map { CeremonyRequestRules.isControl($0) ? " " : $0 }))
    }
}

private let hexDigits = Array("0123456789ABCDEF")

/// `{"error": code, "message": …}`, with the ceremony details when there are any.
func errorJSON(_ error: WebRelyingPartyError, ceremony: CeremonyKind? = nil, userName: String? = nil) -> [UInt8] {
    errorJSONValue(error, ceremony: ceremony, userName: userName).serialized()
}

func errorJSONValue(_ error: WebRelyingPartyError, ceremony: CeremonyKind?, userName: String?) -> JSONValue {
    JSONValue.sortedObject([
        "error": .string(error.code.rawValue), "message": .string(error.message),
        "verdict": ceremony == nil ? nil : .string("refused"), "ceremony": ceremony.map { .string($0.rawValue) },
        "user": userName.map { .string($0) },
    ])
}

import JSON
import WebAuthnClient

/// Android's Digital Asset Links statement list, as a site serves it at `/.well-known/assetlinks.json`: which apps
/// and sites the domain delegates permissions to.
///
/// Format (https://developers.google.com/digital-asset-links/v1/statements and
/// https://developer.android.com/identity/sign-in/credential-manager#add-support-dal): a JSON array of statements,
/// each `{"relation": [...], "target": {...}}`, the target either `{"namespace": "android_app", "package_name",
/// "sha256_cert_fingerprints": [...]}` or `{"namespace": "web", "site": "https://…"}`. A statement
/// `{"include": "https://…/assetlinks.json"}` points at another list; it is kept in `includes` and not followed
/// (this type does no I/O). Unknown members are ignored; known ones of the wrong type are errors naming their path.
public struct AssetLinks: Hashable, Sendable {
    /// The relation that lets an app use the site's saved passwords and passkeys (Credential Manager).
    public static let getLoginCredentials = "delegate_permission/common.get_login_creds"
    /// The relation that makes the site's links open the app (Android App Links).
    public static let handleAllURLs = "delegate_permission/common.handle_all_urls"

    /// The largest file read: 128 KB, as for Apple's file.
    public static let maximumBytes = 128 * 1024

    /// One statement: the relations it grants and to whom.
    public struct Statement: Hashable, Sendable {
        public var relations: [String]
        public var target: Target
        /// Its JSON path, `[2]`.
        public var location: String
    }

    /// Who a statement grants its relations to.
    public enum Target: Hashable, Sendable, CustomStringConvertible {
        /// An Android app by package name, signed with one of these certificates (SHA-256 of the signing
        /// certificate, 32 bytes each).
        case androidApp(packageName: String, fingerprints: [[UInt8]])
        /// A web site by origin (`https://example.com`, lower-cased, default port dropped).
        case web(site: String)
        /// A namespace other than `android_app` and `web`, kept so that it can be shown.
        case other(namespace: String)

        public var description: String {
            switch self {
            case .androidApp(let name, let prints):
                "android_app \(name) (\(prints.map(AssetLinks.fingerprintText).joined(separator: ", ")))"
            case .web(let site): "web \(site)"
            case .other(let namespace): "namespace \(namespace)"
            }
        }
    }

    public var statements: [Statement]
    /// The URLs of `include` statements, not followed.
    public var includes: [String]

    public init(json: [UInt8]) throws(AssociationFileError) {
        let root = try AssociationJSON.parse(json, maximumBytes: Self.maximumBytes, what: "asset links file")
        guard case .array(let elements) = root else {
            throw AssociationJSON.wrongType("", root, expected: "an array of statements")
        }
        statements = []
        includes = []
        for (index, element) in elements.enumerated() {
            let statement = try JSONObject(element, path: "[\(index)]")
            if let include = try statement.string("include") {
                includes.append(include)
                continue
            }
            guard let relations = try statement.strings("relation") else {
                throw AssociationFileError(
                    .missingMember, path: statement.path("relation"), "\(statement.path("relation")) is missing")
            }
            guard let target = try statement.object("target") else {
                throw AssociationFileError(
                    .missingMember, path: statement.path("target"), "\(statement.path("target")) is missing")
            }
            statements.append(
                Statement(relations: relations, target: try Self.target(target), location: statement.path))
        }
    }

    private static func target(_ object: JSONObject) throws(AssociationFileError) -> Target {
        guard let namespace = try object.string("namespace") else {
            throw AssociationFileError(
                .missingMember, path: object.path("namespace"), "\(object.path("namespace")) is missing")
        }
        switch namespace {
        case "android_app":
            guard let name = try object.string("package_name") else {
                throw AssociationFileError(
                    .missingMember, path: object.path("package_name"), "\(object.path("package_name")) is missing")
            }
            var prints: [[UInt8]] = []
            for (index, text) in (try object.strings("sha256_cert_fingerprints") ?? []).enumerated() {
                let path = AssociationJSON.path(object.path("sha256_cert_fingerprints"), index)
                do { prints.append(try fingerprint(text)) } catch {
                    throw AssociationFileError(.invalidFingerprint, path: path, "\(path): \(error.message)")
                }
            }
            return .androidApp(packageName: name, fingerprints: prints)
        case "web":
            guard let site = try object.string("site") else {
                throw AssociationFileError(
                    .missingMember, path: object.path("site"), "\(object.path("site")) is missing")
            }
            guard let origin = webOrigin(site) else {
                throw AssociationFileError(
                    .wrongType, path: object.path("site"),
                    "\(object.path("site")) \"\(site.printable)\" is not an http(s) origin")
            }
            return .web(site: origin)
        default:
            return .other(namespace: namespace)
        }
    }

    /// Reads a SHA-256 fingerprint written as 32 colon-separated pairs of hexadecimal digits, in either case
    /// (`14:6D:E9:…`), the form `keytool -list -v` prints.
    public static func fingerprint(_ text: String) throws(AssociationFileError) -> [UInt8] {
        let pairs = text.split(separator: ":", omittingEmptySubsequences: false)
        guard pairs.count == 32 else {
            throw AssociationFileError(
                .invalidFingerprint,
                "\"\(text.printable)\" is not a SHA-256 fingerprint: expected 32 colon-separated hexadecimal pairs "
                    + "(AA:BB:…), found \(pairs.count) parts")
        }
        var bytes: [UInt8] = []
        for pair in pairs {
            guard pair.utf8.count == 2, pair.utf8.allSatisfy(\.isASCIIHex), let byte = UInt8(pair, radix: 16) else {
                throw AssociationFileError(
                    .invalidFingerprint,
                    "\"\(text.printable)\" is not a SHA-256 fingerprint: \"\(pair.printable)\" is not two hexadecimal digits"
                )
            }
            bytes.append(byte)
        }
        return bytes
    }

    /// `AA:BB:…` in upper case.
    public static func fingerprintText(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let text = String(byte, radix: 16, uppercase: true)
            return text.count == 1 ? "0" + text : text
        }.joined(separator: ":")
    }

    /// The origin of an `http` or `https` URL, `scheme://host[:port]` with the default port dropped; nil otherwise.
    static func webOrigin(_ text: String) -> String? {
        guard let origin = try? WebOrigin(url: text), origin.scheme == "https" || origin.scheme == "http" else {
            return nil
        }
        return origin.description
    }

    /// Whether some statement grants `relation` to the Android app `packageName` signed by the certificate whose
    /// SHA-256 is `fingerprint`. Package names compare exactly; fingerprints as bytes.
    public func grants(_ relation: String, packageName: String, fingerprint: [UInt8]) -> Bool {
        reasonNotGranted(relation, packageName: packageName, fingerprint: fingerprint) == nil
    }

    /// Why no statement grants `relation` to the app, nil when one does.
    public func reasonNotGranted(_ relation: String, packageName: String, fingerprint: [UInt8]) -> String? {
        let apps = statements.filter { statement in
            if case .androidApp(packageName, _) = statement.target { return true }
            return false
        }
        guard !apps.isEmpty else { return "no statement names the Android app \(packageName.printable)" }
        let signed = apps.filter { statement in
            if case .androidApp(_, let prints) = statement.target { return prints.contains(fingerprint) }
            return false
        }
        guard !signed.isEmpty else {
            return "the statements for \(packageName.printable) list other certificate fingerprints, not "
                + Self.fingerprintText(fingerprint)
        }
        guard signed.contains(where: { $0.relations.contains(relation) }) else {
            let granted = Set(signed.flatMap(\.relations)).sorted().joined(separator: ", ")
            return "the statements for \(packageName.printable) with this certificate grant \(granted.printable), "
                + "not \(relation)"
        }
        return nil
    }

    /// Whether some statement grants `relation` to the web site `site` (any URL of it; compared by origin).
    public func grants(_ relation: String, site: String) -> Bool {
        guard let origin = Self.webOrigin(site) else { return false }
        return statements.contains { $0.target == .web(site: origin) && $0.relations.contains(relation) }
    }
}

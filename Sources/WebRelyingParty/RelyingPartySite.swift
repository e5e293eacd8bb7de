import Basics
import Foundation
import JSON
import RelyingParty
import WebAuthn

/// The web relying party as HTTP requests and answers, with no sockets: routes, status codes, the page and the
/// JSON endpoints (`Docs/RelyingParty.md`). The NIO adapter turns bytes into a ``Request``, calls
/// ``handle(_:now:date:randomBytes:)``, saves ``Exchange/stateToSave`` (then calls ``commit(_:)``), prints
/// ``Exchange/line`` and writes ``Exchange/response``.
///
/// | method and path | answer |
/// |---|---|
/// | `GET /` | the page |
/// | `GET /credentials` | the registered accounts of this RP ID |
/// | `POST /registration/options`, `POST /authentication/options` | options JSON |
/// | `POST /registration/verify`, `POST /authentication/verify` | the verdict |
/// | `POST /client-result` | records a failure the browser reported |
/// | `POST /credentials/delete` | a signed-in browser deletes one of its user's passkeys |
/// | `POST /password/sign-up`, `POST /password/sign-in` | an account with a password; a sign-in answers with the
/// options of an automatic passkey upgrade |
/// | `POST /account/rename` | a signed-in browser changes its account's display name |
public struct RelyingPartySite: Sendable {
    /// One HTTP request, its body complete.
    public struct Request: Hashable, Sendable {
        /// The method as sent (`GET`, `POST`, …).
        public var method: String
        /// The request target: path and optional query.
        public var target: String
        /// The `Content-Type` header, when there is one.
        public var contentType: String?
        /// The `Host` header, when there is one.
        public var host: String?
        /// The `Cookie` header, when there is one.
        public var cookie: String?
        public var body: [UInt8]

        public init(
            method: String, target: String, host: String?, contentType: String? = nil, cookie: String? = nil,
            body: [UInt8] = []
        ) {
            self.method = method
            self.target = target
            self.host = host
            self.contentType = contentType
            self.cookie = cookie
            self.body = body
        }
    }

    /// One HTTP answer; the adapter adds `Content-Length` and `Connection`.
    public struct Response: Hashable, Sendable {
        public var status: Int
        /// Header fields in order, including `Content-Type`.
        public var headers: [Header]
        public var body: [UInt8]

        public struct Header: Hashable, Sendable {
            public var name: String
            public var value: String
        }

        public init(status: Int, headers: [Header], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// The first value of header `name` (case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// What one request came to.
    public struct Exchange: Sendable {
        public var response: Response
        /// The verdict, for the verification and client-result endpoints.
        public var verdict: Verdict?
        /// The state to save before answering, then to ``RelyingPartySite/commit(_:)``.
        public var stateToSave: RelyingPartyState?

        /// The line to print: ``Verdict/line``.
        public var line: String? { verdict?.line }

        /// The same exchange when ``stateToSave`` could not be saved: a 500 `stateNotSaved` refusal, nothing kept.
        public func savingFailed(_ reason: String) -> Exchange {
            let error = WebRelyingPartyError(
                .stateNotSaved, "the state file was not saved, so nothing was kept: \(reason)")
            let ceremony: CeremonyKind = if case .authenticated = verdict { .authentication } else { .registration }
            let userName: String? =
                switch verdict {
                case .registered(let verdict): verdict.userName
                case .authenticated(let verdict): verdict.userName
                default: nil
                }
            switch verdict {
            case .passwordSignedUp?:
                return RelyingPartySite.answer(.passwordRefused(ceremony: "sign-up", error), stateToSave: nil)
            case .renamed?: return RelyingPartySite.refusal(error)
            default: return RelyingPartySite.answer(.refused(ceremony, error, userName: userName), stateToSave: nil)
            }
        }
    }

    /// The largest request body accepted (64 KiB); the adapter answers ``refusal(_:)`` with
    /// ``WebRelyingPartyError/Code/payloadTooLarge`` for anything larger.
    public static let maximumBodyBytes = 64 * 1024

    public private(set) var relyingParty: WebRelyingParty
    /// The state as last saved.
    public private(set) var state: RelyingPartyState
    /// The host names a request's `Host` header may give (lower case, without the port): see ``hostNames(origins:extra:)``.
    public let hostNames: Set<String>
    /// Who is signed in, by browser.
    public private(set) var sessions = SignInSessions()

    /// A site answering requests whose `Host` is one of `hostNames` (by default the loopback names and the hosts of
    /// the relying party's origins); every other request is refused with 421 ``WebRelyingPartyError/Code/misdirectedRequest``.
    public init(relyingParty: WebRelyingParty, state: RelyingPartyState, hostNames: Set<String>? = nil) {
        self.relyingParty = relyingParty
        self.state = state
        self.hostNames = hostNames ?? Self.hostNames(origins: relyingParty.configuration.origins)
    }

    /// The names a server on this machine answers to: `localhost`, `127.0.0.1` and `[::1]`, the host of each
    /// origin (a page behind a proxy), and `extra` (`rp serve --host`). Ports are not compared: a page that reached
    /// the server by DNS rebinding is on the server's port too, and gives away its own name.
    public static func hostNames(origins: Set<String>, extra: [String] = []) -> Set<String> {
        var names: Set<String> = ["localhost", "127.0.0.1", "[::1]"]
        for origin in origins {
            if let host = URLComponents(string: origin)?.host?.lowercased(), !host.isEmpty {
                names.insert(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host)
            }
        }
        for name in extra { names.insert(name.lowercased()) }
        return names
    }

    /// The address to open in a browser, printed first by `rp serve`: `http://localhost:PORT` when that is one of
    /// the `origins` and the server listens on a loopback address, since a page opened at `http://127.0.0.1` is
    /// another origin, whose ceremonies the relying party refuses; else the address the server listens on.
    public static func addressToOpen(origins: Set<String>, listeningOn baseURL: String, port: Int) -> String {
        let localhost = "http://localhost:\(port)"
        let host = URLComponents(string: baseURL)?.host?.lowercased() ?? ""
        let loopback = host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
        return loopback && origins.contains(localhost) ? localhost : baseURL
    }

    /// The host name of a `Host` header: lower case, without its port (`[::1]:8787` → `[::1]`).
    static func hostName(_ header: String) -> String {
        let text = header.trimmingCharacters(in: .whitespaces).lowercased()
        if text.hasPrefix("["), let end = text.firstIndex(of: "]") { return String(text[...end]) }
        return String(text.prefix { $0 != ":" })
    }

    /// Adopts a state that ``Exchange/stateToSave`` asked for, once it is saved.
    public mutating func commit(_ state: RelyingPartyState) {
        self.state = state
    }

    private static let routes: [String: String] = [
        "/": "GET", "/credentials": "GET", "/favicon.ico": "GET",
        "/registration/options": "POST", "/registration/verify": "POST",
        "/authentication/options": "POST", "/authentication/verify": "POST", "/client-result": "POST",
        "/credentials/delete": "POST", "/.well-known/passkey-endpoints": "GET",
        "/password/sign-up": "POST", "/password/sign-in": "POST", "/account/rename": "POST",
    ]

    /// Answers one request. `randomBytes` gives challenges and new user handles; `now` times challenges and
    /// `date` stamps new registrations.
    public mutating func handle(
        _ request: Request, now: ContinuousClock.Instant, date: Date, randomBytes: (Int) -> [UInt8]
    ) -> Exchange {
        // Before anything else: a page that reached this server through a domain of its own (DNS rebinding) must
        // get nothing, not the accounts, a ceremony or the page (issue 23, attack 2).
        guard let host = request.host, hostNames.contains(Self.hostName(host)) else {
            let named = request.host.map { "at \(Verdict.field($0))" } ?? "without a Host header"
            return Self.refusal(
                WebRelyingPartyError(
                    .misdirectedRequest,
                    "this relying party answers at " + hostNames.sorted().joined(separator: ", ") + ", not \(named)"))
        }
        let path = String(request.target.prefix { $0 != "?" && $0 != "#" })
        guard let method = Self.routes[path] else {
            return Self.refusal(WebRelyingPartyError(.notFound, "no such path: \(Verdict.field(path))"))
        }
        guard request.method == method else {
            return Self.refusal(
                WebRelyingPartyError(.methodNotAllowed, "\(path) takes \(method) only"),
                headers: [Response.Header(name: "Allow", value: method)])
        }
        if method == "POST" {
            let mediaType = request.contentType?.split(separator: ";").first?
                .trimmingCharacters(in: .whitespaces).lowercased()
            guard mediaType == "application/json" else {
                return Self.refusal(
                    WebRelyingPartyError(.unsupportedMediaType, "the body must be application/json"))
            }
        }
        switch path {
        case "/":
            return Exchange(response: WebPage.response, verdict: nil, stateToSave: nil)
        case "/favicon.ico":
            return Exchange(response: Response(status: 204, headers: Self.commonHeaders, body: []), verdict: nil)
        case "/credentials":
            return Self.json(200, credentialsJSON(signedIn: sessions.userName(cookieHeader: request.cookie, now: now)))
        case "/.well-known/passkey-endpoints":
            return Self.json(200, passkeyEndpointsJSON(host: host))
        case "/registration/options":
            let parsed: RegistrationOptionsRequest
            do throws(JSONBodyError) {
                parsed = try RegistrationOptionsRequest(json: request.body)
            } catch {
                return Self.refusal(Self.requestError(error))
            }
            // Another passkey for an existing user only from a browser signed in as that user (issue 23, attack 2).
            // The same for a user with a password and no passkey yet: a passkey would take the account over.
            if accountExists(parsed.userName),
                sessions.userName(cookieHeader: request.cookie, now: now) != parsed.userName
            {
                return Self.refusal(
                    WebRelyingPartyError(
                        .signInRequired,
                        "\(Verdict.field(parsed.userName)) already has an account here: sign in as "
                            + "\(Verdict.field(parsed.userName)) to add a passkey"))
            }
            let options = relyingParty.registrationOptions(
                for: parsed, state: state, challenge: randomBytes(32), newUserHandle: randomBytes(16), now: now)
            return Self.json(200, options)
        case "/authentication/options":
            do throws(WebRelyingPartyError) {
                let parsed: AuthenticationOptionsRequest
                do throws(JSONBodyError) {
                    parsed = try AuthenticationOptionsRequest(json: request.body)
                } catch {
                    throw Self.requestError(error)
                }
                let options = try relyingParty.authenticationOptions(
                    for: parsed, state: state, challenge: randomBytes(32), now: now)
                return Self.json(200, options)
            } catch {
                return Self.refusal(error)
            }
        case "/registration/verify":
            let outcome = relyingParty.verifyRegistration(request.body, state: state, now: now, date: date)
            return signIn(
                Self.answer(outcome.verdict, stateToSave: outcome.newState, decoding: request.body), now: now,
                randomBytes: randomBytes)
        case "/authentication/verify":
            let outcome = relyingParty.verifyAuthentication(request.body, state: state, now: now)
            // After a sign-in the page tells the browser's passkey provider the account's passkeys and names.
            var extra: [(String, JSONValue)] = []
            if case .authenticated(let verdict) = outcome.verdict,
                let signals = signalsJSON(userName: verdict.userName, state: outcome.newState ?? state)
            {
                extra.append(("signals", signals))
            }
            return signIn(
                Self.answer(outcome.verdict, stateToSave: outcome.newState, decoding: request.body, extra: extra),
                now: now, randomBytes: randomBytes)
        case "/credentials/delete":
            return delete(request, now: now)
        case "/password/sign-up":
            return signIn(passwordSignUp(request, randomBytes: randomBytes), now: now, randomBytes: randomBytes)
        case "/password/sign-in":
            return signIn(
                passwordSignIn(request, now: now, randomBytes: randomBytes), now: now, randomBytes: randomBytes)
        case "/account/rename":
            return rename(request, now: now, randomBytes: randomBytes)
        default:  // "/client-result"
            do throws(JSONBodyError) {
                return Self.answer(.clientError(try ClientResult(json: request.body)), stateToSave: nil)
            } catch {
                return Self.refusal(Self.requestError(error))
            }
        }
    }

    /// The W3C Well-Known URL for Passkey Endpoints, for a provider's "manage this passkey on the site": this page
    /// both creates passkeys (`enroll`, the page's registration form) and lists and deletes them (`manage`), at the
    /// origin the request came to.
    func passkeyEndpointsJSON(host: String) -> [UInt8] {
        let origins = relyingParty.configuration.origins.sorted()
        let origin = origins.first { Self.hostNames(origins: [$0]).contains(Self.hostName(host)) } ?? origins.first
        let base = origin ?? "https://\(relyingParty.configuration.relyingParty.id)"
        return JSONValue.sortedObject([
            ("enroll", .string(base + "/#register")), ("manage", .string(base + "/#passkeys")),
        ]).serialized()
    }

    /// A verified registration or sign-in starts a session of its user: the answer sets its cookie. (When the state
    /// cannot be saved, ``Exchange/savingFailed(_:)`` answers without it.)
    private mutating func signIn(
        _ exchange: Exchange, now: ContinuousClock.Instant, randomBytes: (Int) -> [UInt8]
    ) -> Exchange {
        let userName: String
        switch exchange.verdict {
        case .registered(let verdict)?: userName = verdict.userName
        case .authenticated(let verdict)?: userName = verdict.userName
        case .passwordSignedUp(let name)?, .passwordSignedIn(let name)?: userName = name
        default: return exchange
        }
        var exchange = exchange
        let cookie = sessions.start(userName: userName, token: randomBytes(32), now: now)
        exchange.response.headers.append(Response.Header(name: "Set-Cookie", value: cookie))
        return exchange
    }

    /// A refusal outside any ceremony: `{"error": code, "message": …}` with the code's status.
    public static func refusal(_ error: WebRelyingPartyError, headers: [Response.Header] = []) -> Exchange {
        Exchange(
            response: Response(
                status: error.status, headers: jsonHeaders + headers,
                body: errorJSON(error)),
            verdict: nil, stateToSave: nil)
    }

    static func answer(
        _ verdict: Verdict, stateToSave: RelyingPartyState?, decoding body: [UInt8]? = nil,
        extra: [(String, JSONValue)] = []
    ) -> Exchange {
        var json = verdict.jsonValue
        var more = extra
        // The page shows what the authenticator returned, refused or not (`DecodedResponse`).
        if let body, let decoded = DecodedResponse.decode(body) { more.append(("decoded", decoded)) }
        if !more.isEmpty, case .object(let members) = json {
            json = .sortedObject(members.map { ($0.key, $0.value) } + more)
        }
        return Exchange(
            response: Response(status: verdict.status, headers: jsonHeaders, body: json.serialized()), verdict: verdict,
            stateToSave: stateToSave)
    }

    /// `POST /credentials/delete {"credentialId"}`: a browser signed in as the passkey's user deletes it (no other
    /// browser may: the page's session cookie decides, as for adding a passkey to an existing user).
    private func delete(_ request: Request, now: ContinuousClock.Instant) -> Exchange {
        let rpID = relyingParty.configuration.relyingParty.id
        let id: [UInt8]
        do throws(JSONBodyError) {
            id = try JSONObject(request.body).bytes("credentialId")
        } catch {
            return Self.refusal(Self.requestError(error))
        }
        let text = id.base64URLEncodedString
        guard let account = state.accounts(for: rpID).first(where: { $0.credential.id == id }) else {
            return Self.refusal(WebRelyingPartyError(.noSuchPasskey, "no passkey \(text) is registered here"))
        }
        guard sessions.userName(cookieHeader: request.cookie, now: now) == account.userName else {
            return Self.refusal(
                WebRelyingPartyError(
                    .signInRequired,
                    "passkey \(text) is \(Verdict.field(account.userName))'s: sign in as "
                        + "\(Verdict.field(account.userName)) to delete it"))
        }
        var newState = state
        newState.remove(credentialID: id, rpID: rpID)
        return Self.answer(
            .deleted(userName: account.userName, credentialID: id), stateToSave: newState,
            extra: [("rpId", .string(rpID))])
    }

    /// Whether `userName` has an account here: a passkey, or a user record (a password, a display name).
    private func accountExists(_ userName: String) -> Bool {
        let rpID = relyingParty.configuration.relyingParty.id
        return state.user(rpID: rpID, userName: userName) != nil
            || state.accounts(for: rpID).contains { $0.userName == userName }
    }

    /// What the page passes to the Signal API for `userName` (WebAuthn L3 §5.1.10–5.1.12): `{"rpId", "userId",
    /// "name", "displayName", "allAcceptedCredentialIds"}`, the user handle and credential IDs in base64url; nil when
    /// the account has no user handle here.
    func signalsJSON(userName: String, state: RelyingPartyState) -> JSONValue? {
        let rpID = relyingParty.configuration.relyingParty.id
        let accounts = state.accounts(for: rpID).filter { $0.userName == userName }
        let record = state.user(rpID: rpID, userName: userName)
        guard let handle = accounts.lazy.compactMap(\.credential.userHandle).first ?? record?.userHandle else {
            return nil
        }
        let accepted = accounts.filter { ($0.credential.userHandle ?? handle) == handle }
        return .sortedObject([
            "rpId": .string(rpID), "userId": .string(handle.base64URLEncodedString), "name": .string(userName),
            "displayName": .string(record?.displayName ?? userName),
            "allAcceptedCredentialIds": .strings(accepted.map(\.credential.id.base64URLEncodedString)),
        ])
    }

    /// `POST /password/sign-up {"username", "password", "displayName"?}`: a new account that signs in with a
    /// password; only the password's scrypt hash is kept.
    private func passwordSignUp(_ request: Request, randomBytes: (Int) -> [UInt8]) -> Exchange {
        let parsed: PasswordRequest
        do throws(JSONBodyError) {
            parsed = try PasswordRequest(json: request.body, newPassword: true)
        } catch {
            return Self.refusal(Self.requestError(error))
        }
        guard !accountExists(parsed.userName) else {
            return Self.answer(
                .passwordRefused(
                    ceremony: "sign-up",
                    WebRelyingPartyError(.userExists, "\(Verdict.field(parsed.userName)) already has an account here")),
                stateToSave: nil)
        }
        guard let hash = PasswordSignIn.hash(parsed.password, salt: randomBytes(PasswordSignIn.saltByteCount)) else {
            return Self.refusal(
                WebRelyingPartyError(
                    .stateNotSaved, "the password could not be hashed (out of memory): nothing was kept"))
        }
        let rpID = relyingParty.configuration.relyingParty.id
        var newState = state
        newState.set(
            RelyingPartyState.User(
                rpID: rpID, userName: parsed.userName, displayName: parsed.displayName, userHandle: randomBytes(16),
                password: hash))
        return Self.answer(.passwordSignedUp(userName: parsed.userName), stateToSave: newState)
    }

    /// `POST /password/sign-in {"username", "password"}`: on success a session, the Signal API's arguments, and in
    /// `upgrade` the registration options of an automatic passkey upgrade (resident key required, user
    /// verification preferred: a conditional create may have none to give), remembered as an upgrade so that its
    /// response is accepted without the UP flag. A wrong password and an unknown user get the same answer after
    /// the same scrypt work.
    private mutating func passwordSignIn(
        _ request: Request, now: ContinuousClock.Instant, randomBytes: (Int) -> [UInt8]
    ) -> Exchange {
        let parsed: PasswordRequest
        do throws(JSONBodyError) {
            parsed = try PasswordRequest(json: request.body, newPassword: false)
        } catch {
            return Self.refusal(Self.requestError(error))
        }
        let rpID = relyingParty.configuration.relyingParty.id
        let record = state.user(rpID: rpID, userName: parsed.userName)
        guard PasswordSignIn.matches(parsed.password, record?.password) else {
            return Self.answer(
                .passwordRefused(
                    ceremony: "sign-in", WebRelyingPartyError(.signInFailed, "the user name or the password is wrong")),
                stateToSave: nil)
        }
        let options = relyingParty.registrationOptions(
            for: RegistrationOptionsRequest(
                userName: parsed.userName, residentKey: .required, userVerification: .preferred),
            state: state, challenge: randomBytes(32), newUserHandle: randomBytes(16), now: now, upgrade: true)
        var extra: [(String, JSONValue)] = []
        if let upgrade = try? JSONValue(parsing: options) { extra.append(("upgrade", upgrade)) }
        if let signals = signalsJSON(userName: parsed.userName, state: state) { extra.append(("signals", signals)) }
        return Self.answer(.passwordSignedIn(userName: parsed.userName), stateToSave: nil, extra: extra)
    }

    /// `POST /account/rename {"username", "displayName"}`: a browser signed in as the user changes the account's
    /// display name (the user name stays: it is the sign-in name and the passkeys' `user.name`); the answer carries
    /// the Signal API's arguments, for signalCurrentUserDetails.
    private func rename(
        _ request: Request, now: ContinuousClock.Instant, randomBytes: (Int) -> [UInt8]
    ) -> Exchange {
        let parsed: RenameRequest
        do throws(JSONBodyError) {
            parsed = try RenameRequest(json: request.body)
        } catch {
            return Self.refusal(Self.requestError(error))
        }
        guard sessions.userName(cookieHeader: request.cookie, now: now) == parsed.userName else {
            return Self.refusal(
                WebRelyingPartyError(
                    .signInRequired, "sign in as \(Verdict.field(parsed.userName)) to rename the account"))
        }
        let rpID = relyingParty.configuration.relyingParty.id
        let handle =
            state.accounts(for: rpID).lazy.filter { $0.userName == parsed.userName }.compactMap(\.credential.userHandle)
            .first
        var record =
            state.user(rpID: rpID, userName: parsed.userName)
            ?? RelyingPartyState.User(
                rpID: rpID, userName: parsed.userName, displayName: nil, userHandle: handle ?? randomBytes(16),
                password: nil)
        record.displayName = parsed.displayName
        var newState = state
        newState.set(record)
        let signals = signalsJSON(userName: parsed.userName, state: newState)
        return Self.answer(
            .renamed(userName: parsed.userName, displayName: parsed.displayName), stateToSave: newState,
            extra: signals.map { [("signals", $0)] } ?? [])
    }

    private static func requestError(_ error: JSONBodyError) -> WebRelyingPartyError {
        WebRelyingPartyError(error == .notJSON ? .badJSON : .invalidRequest, error.description)
    }

    private static func json(_ status: Int, _ body: [UInt8]) -> Exchange {
        Exchange(response: Response(status: status, headers: jsonHeaders, body: body), verdict: nil, stateToSave: nil)
    }

    static let commonHeaders = [
        Response.Header(name: "Cache-Control", value: "no-store"),
        Response.Header(name: "X-Content-Type-Options", value: "nosniff"),
    ]

    private static let jsonHeaders =
        [Response.Header(name: "Content-Type", value: "application/json; charset=utf-8")] + commonHeaders

    /// `{"rpId", "origins", "accounts": [{"user", "credentialId", "registered", "signCount", "transports", …}]}`,
    /// oldest registration first.
    private func credentialsJSON(signedIn: String?) -> [UInt8] {
        let configuration = relyingParty.configuration
        let rpID = configuration.relyingParty.id
        let accounts = state.accounts(for: rpID).map { account -> JSONValue in
            let credential = account.credential
            return .sortedObject([
                "user": .string(account.userName), "credentialId": .string(credential.id.base64URLEncodedString),
                "displayName": .string(
                    state.user(rpID: rpID, userName: account.userName)?.displayName ?? account.userName),
                "registered": .string(account.registered.formatted(.iso8601)),
                "signCount": .integer(credential.signCount), "transports": .strings(credential.transports),
                "uvInitialized": .bool(credential.uvInitialized), "backupEligible": .bool(credential.backupEligible),
                "backupState": .bool(credential.backupState), "aaguid": .string(credential.aaguid.description),
                "attestationFormat": .string(credential.attestationFormat),
            ])
        }
        return JSONValue.sortedObject([
            "rpId": .string(configuration.relyingParty.id), "origins": .strings(configuration.origins.sorted()),
            "accounts": .array(accounts), "signedIn": signedIn.map { .string($0) },
        ]).serialized()
    }
}

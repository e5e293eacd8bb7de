// swift-tools-version:6.1
import PackageDescription

/// `Tools/fuzz` builds with PASSKEY_FUZZ_INSTRUMENTATION=1: this package's own modules then get AddressSanitizer and
/// libFuzzer's coverage, and its dependencies keep their ordinary objects. The fuzz targets' coverage is this
/// package's code, and CI's fuzz stage, which builds in `.build` after the debug build, compiles no dependency again.
let fuzzInstrumentation = Context.environment["PASSKEY_FUZZ_INSTRUMENTATION"] == "1"

/// Settings every target of ours shares: Swift 6 mode with the two upcoming features the style guide asks for.
let strictSettings: [SwiftSetting] =
    [
        .swiftLanguageMode(.v6),
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ]
    + (fuzzInstrumentation
        ? [.unsafeFlags(["-sanitize=address", "-sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table"])]
        : [])

let crypto = Target.Dependency.product(name: "Crypto", package: "swift-crypto")
let cryptoExtras = Target.Dependency.product(name: "_CryptoExtras", package: "swift-crypto")
let nioCore = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let nioPosix = Target.Dependency.product(name: "NIOPosix", package: "swift-nio")
let nioHTTP1 = Target.Dependency.product(name: "NIOHTTP1", package: "swift-nio")
let nioEmbedded = Target.Dependency.product(name: "NIOEmbedded", package: "swift-nio")
let nioWebSocket = Target.Dependency.product(name: "NIOWebSocket", package: "swift-nio")
let nioSSL = Target.Dependency.product(name: "NIOSSL", package: "swift-nio-ssl")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let asyncHTTPClient = Target.Dependency.product(name: "AsyncHTTPClient", package: "async-http-client")
let metrics = Target.Dependency.product(name: "CoreMetrics", package: "swift-metrics")
let prometheus = Target.Dependency.product(name: "Prometheus", package: "swift-prometheus")
let serviceLifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let unixSignals = Target.Dependency.product(name: "UnixSignals", package: "swift-service-lifecycle")
let tomlKit = Target.Dependency.product(name: "TOMLKit", package: "TOMLKit")

let package = Package(
    name: "passkey",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "passkey", targets: ["passkey"]),
        .executable(name: "passkey-bench", targets: ["PasskeyBench"]),
        .executable(name: "passkey-relay", targets: ["passkey-relay"]),
        .library(name: "CBOR", targets: ["CBOR"]),
        .library(name: "JSON", targets: ["JSON"]),
        .library(name: "WebAuthn", targets: ["WebAuthn"]),
        .library(name: "CTAP2", targets: ["CTAP2"]),
        .library(name: "CTAPHID", targets: ["CTAPHID"]),
        .library(name: "RelyingParty", targets: ["RelyingParty"]),
        .library(name: "PasskeyStoreIO", targets: ["PasskeyStoreIO"]),
        .library(name: "CTAPHIDIO", targets: ["CTAPHIDIO"]),
        .library(name: "SecurityKeyDriver", targets: ["SecurityKeyDriver"]),
        .library(name: "UHID", targets: ["UHID"]),
        .library(name: "Hybrid", targets: ["Hybrid"]),
        .library(name: "Proximity", targets: ["Proximity"]),
        .library(name: "ProximityIO", targets: ["ProximityIO"]),
        .library(name: "HybridIO", targets: ["HybridIO"]),
        .library(name: "HybridDriver", targets: ["HybridDriver"]),
        .library(name: "QRImageIO", targets: ["QRImageIO"]),
        .library(name: "RelayIO", targets: ["RelayIO"]),
        .library(name: "RelayTLSIO", targets: ["RelayTLSIO"]),
        .library(name: "WebRelyingParty", targets: ["WebRelyingParty"]),
        .library(name: "WebRelyingPartyIO", targets: ["WebRelyingPartyIO"]),
        .library(name: "PublicSuffix", targets: ["PublicSuffix"]),
        .library(name: "WebAuthnClient", targets: ["WebAuthnClient"]),
        .library(name: "WebAuthnClientIO", targets: ["WebAuthnClientIO"]),
        .library(name: "WebAuthnClientDriver", targets: ["WebAuthnClientDriver"]),
        .library(name: "CredentialExchange", targets: ["CredentialExchange"]),
        .library(name: "NearbyShare", targets: ["NearbyShare"]),
        .library(name: "NearbyShareDriver", targets: ["NearbyShareDriver"]),
        .library(name: "PasswordRules", targets: ["PasswordRules"]),
        .library(name: "PasskeySettings", targets: ["PasskeySettings"]),
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "SignedFilesIO", targets: ["SignedFilesIO"]),
        .executable(name: "passkey-fuzz", targets: ["passkey-fuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
    ],
    targets: [
        // MARK: Pure code: no I/O, no NIO. Time, randomness and storage come in as values or protocols.
        // Hex, base64url, a digest's bytes and durations in seconds or milliseconds, for every module above.
        .target(name: "Basics", dependencies: ["COpenSSL", crypto], swiftSettings: strictSettings),
        .target(name: "CBOR", swiftSettings: strictSettings),
        // JSON text (RFC 8259) read strictly as JavaScript's JSON.parse reads it, written as JSON.stringify writes it.
        .target(name: "JSON", swiftSettings: strictSettings),
        .target(
            name: "WebAuthn", dependencies: ["Basics", "CBOR", "JSON", crypto, cryptoExtras],
            swiftSettings: strictSettings),
        .target(
            name: "CTAP2", dependencies: ["Basics", "CBOR", "WebAuthn", crypto, cryptoExtras],
            swiftSettings: strictSettings),
        .target(name: "CTAPHID", swiftSettings: strictSettings),
        .target(name: "UHID", dependencies: ["Basics"], swiftSettings: strictSettings),
        .target(
            name: "RelyingParty", dependencies: ["Basics", "CBOR", "JSON", "WebAuthn", crypto],
            swiftSettings: strictSettings),
        .target(
            name: "WebRelyingParty", dependencies: ["Basics", "CBOR", "JSON", "RelyingParty", "WebAuthn", crypto],
            swiftSettings: strictSettings),
        .target(name: "Hybrid", dependencies: ["Basics", "CBOR", crypto, cryptoExtras], swiftSettings: strictSettings),
        .target(name: "Relay", dependencies: ["Basics", "Hybrid"], swiftSettings: strictSettings),
        // The BLE radio protocol (advertiser, scanner, `--ble` modes) and the HCI command and event codecs.
        .target(name: "Proximity", dependencies: ["Basics"], swiftSettings: strictSettings),
        // The Public Suffix List's format and algorithm, and RFC 3492 Punycode for its Unicode rules; the list comes
        // in as text or bytes.
        .target(name: "PublicSuffix", swiftSettings: strictSettings),
        // What a browser does between create()/get() and the authenticators: origins and RP IDs, related origins,
        // options JSON in, response JSON out, the decision rules, CTAP2 over injected authenticators and UI
        // (Docs/Client.md).
        .target(
            name: "WebAuthnClient",
            dependencies: ["PublicSuffix", "Basics", "CBOR", "CTAP2", "JSON", "WebAuthn", crypto],
            swiftSettings: strictSettings),
        // Moving passkeys between providers: the FIDO Credential Exchange Format (CXF) and the CXP ExportResponse
        // sealed with HPKE, the passphrase archive, and the Bitwarden and KeePassXC files read for import
        // (Docs/Exchange.md).
        .target(
            name: "CredentialExchange", dependencies: ["Basics", "CTAP2", "JSON", crypto],
            swiftSettings: strictSettings),
        // Associated domains: the apple-app-site-association file and its universal-link rules, Android's
        // assetlinks.json and the Smart App Banner tag, read from bytes and text, and checking a domain for an app
        // (the rules, with fetching, waiting and signatures as actions; the approval table) (Docs/Domains.md).
        // WebAuthnClient only for WebOrigin, the URL Standard's origin of an assetlinks.json web target.
        .target(
            name: "AssociatedDomains", dependencies: ["Basics", "JSON", "PublicSuffix", "WebAuthnClient"],
            swiftSettings: strictSettings),
        // Sharing one passkey with a person nearby: the share QR code, messages, sender and receiver (pure).
        .target(
            name: "NearbyShare", dependencies: ["Basics", "CBOR", "CTAP2", "Hybrid", "CredentialExchange", crypto],
            swiftSettings: strictSettings),

        // The Password Rules language (`passwordrules`, UITextInputPasswordRules) read as Apple's reference parser
        // reads it, and Safari's generated password formats; randomness comes in as a generator (Docs/Passwords.md).
        .target(name: "PasswordRules", dependencies: ["Basics"], swiftSettings: strictSettings),

        // The settings (`Docs/Settings.md`): the keys, the settings file's TOML text read through TOMLKit, and the
        // rule flag > environment > file > default, each value with its source.
        .target(
            name: "PasskeySettings", dependencies: ["Hybrid", "Proximity", tomlKit], swiftSettings: strictSettings),

        // MARK: NIO values, no I/O.
        // WebSocket frames from NIO's decoder to whole binary messages, for the tunnel client and the relay alike.
        .target(name: "WebSocketMessages", dependencies: [nioCore, nioWebSocket], swiftSettings: strictSettings),

        // MARK: C shims: system libraries' headers, and libFuzzer's entry point, all under Sources/C.
        .systemLibrary(
            name: "CQRencode", path: "Sources/C/CQRencode", pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CZbar", path: "Sources/C/CZbar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        .systemLibrary(name: "CPNG", path: "Sources/C/CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(
            name: "CBlueZ", path: "Sources/C/CBlueZ", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
        // <linux/uhid.h> sizes and offsets, for UHIDTests only (the header comes with linux-libc-dev).
        .systemLibrary(name: "CUHIDHeader", path: "Sources/C/CUHIDHeader", providers: [.apt(["linux-libc-dev"])]),
        .systemLibrary(name: "CAgentSupport", path: "Sources/C/CAgentSupport", providers: [.apt(["libc6-dev"])]),
        .target(name: "StoreAgent", swiftSettings: strictSettings),
        .target(
            name: "StoreAgentIO",
            dependencies: ["StoreAgent", "CAgentSupport", "PasskeyStoreIO", "CTAP2"],
            swiftSettings: strictSettings),
        // sd-bus, libsystemd's D-Bus client, for the DBus module.
        .systemLibrary(
            name: "CSystemd", path: "Sources/C/CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Sources/C/CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // OpenSSL's libcrypto for CMS (its symbols do not clash with swift-crypto's prefixed BoringSSL).
        .systemLibrary(
            name: "COpenSSL", path: "Sources/C/COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // LLVMFuzzerRunDriver through a weak reference, so that the ordinary build links without libFuzzer.
        .target(name: "CFuzzerDriver", path: "Sources/C/CFuzzerDriver"),
        // A SQLite VFS over the default one whose reads, writes and syncs fail on a plan: the store-faults fuzz target.
        .target(name: "CSQLiteFaults", dependencies: ["CSQLite"], path: "Sources/C/CSQLiteFaults"),

        // MARK: I/O adapters: sockets, files, radios, C libraries.
        // D-Bus through sd-bus: the session or system bus on a thread of its own, method calls with typed arguments
        // and replies, signal subscriptions, async with cancellation (the desktop's notifications; BlueZ later).
        .target(name: "DBus", dependencies: ["CSystemd"], swiftSettings: strictSettings),
        .target(name: "QRImageIO", dependencies: ["CQRencode", "CZbar", "CPNG"], swiftSettings: strictSettings),
        // Every file the provider keeps, named once (`PasskeyFiles`), and the one owner-only reader and writer
        // (`OwnerOnlyFile`: 0600 files, 0700 directories, temporary file, fsync, rename, fsync of the directory).
        .target(name: "PasskeyFilesIO", swiftSettings: strictSettings),
        // A program started with posix_spawn and waited for with waitpid, written once (the clipboard's commands,
        // passkey-bench's children).
        .target(name: "ChildProcessIO", swiftSettings: strictSettings),
        // Both radios: BlueZ's raw HCI socket and the simulated radio over UDP, and `Radio`, which opens the one a
        // `--ble` mode names.
        .target(
            name: "ProximityIO", dependencies: ["Basics", "CBlueZ", "DBus", "Hybrid", "Proximity", nioCore, nioPosix],
            swiftSettings: strictSettings),
        // CMS SignedData files (the signed apple-app-site-association): verify against a trust store and for a
        // domain, and sign, through OpenSSL.
        .target(name: "SignedFilesIO", dependencies: ["Basics", "COpenSSL"], swiftSettings: strictSettings),
        .target(
            name: "PasskeyStoreIO", dependencies: ["Basics", "CTAP2", "CSQLite", "PasskeyFilesIO", crypto],
            swiftSettings: strictSettings),
        .target(
            name: "CTAPHIDIO", dependencies: ["Basics", "CTAPHID", "UHID", nioCore, nioPosix, logging],
            swiftSettings: strictSettings),
        // The tunnel client.
        .target(
            name: "HybridIO",
            dependencies: ["Hybrid", "WebSocketMessages", nioCore, nioPosix, nioHTTP1, nioWebSocket, nioSSL],
            swiftSettings: strictSettings
        ),
        .target(
            name: "RelayIO",
            dependencies: [
                "Basics", "Relay", "Hybrid", "WebSocketMessages", "PasskeyFilesIO", nioCore, nioPosix, nioHTTP1,
                nioWebSocket, logging, metrics, prometheus, serviceLifecycle,
            ],
            swiftSettings: strictSettings
        ),
        // The relay's wss, with swift-nio-ssl: apart, so that the relay's fuzz targets build without a TLS library.
        .target(name: "RelayTLSIO", dependencies: ["RelayIO", nioCore, nioSSL], swiftSettings: strictSettings),
        .target(
            name: "WebRelyingPartyIO",
            dependencies: [
                "Basics", "WebRelyingParty", "RelyingParty", "PasskeyFilesIO", crypto, nioCore, nioPosix, nioHTTP1,
            ],
            swiftSettings: strictSettings
        ),

        // The client's I/O: the system's public suffix list file, and the related origins fetch over HTTPS.
        .target(
            name: "WebAuthnClientIO",
            dependencies: [
                "Basics", "WebAuthnClient", "PublicSuffix", asyncHTTPClient, nioCore, nioHTTP1, nioPosix, nioSSL,
            ],
            swiftSettings: strictSettings
        ),

        // Checking associated domains over HTTPS (signed files through SignedFilesIO) and the approval table's file.
        .target(
            name: "AssociatedDomainsIO",
            dependencies: [
                "AssociatedDomains", "SignedFilesIO", "WebAuthnClient", "WebAuthnClientIO",
                "PasskeyStoreIO", "PasskeyFilesIO",
            ],
            swiftSettings: strictSettings
        ),

        // MARK: Drivers: pure sessions carried out over adapters.
        // A platform's security key: CTAP2 over the host side of CTAPHID (UDP or hidraw), with the PIN when needed.
        .target(
            name: "SecurityKeyDriver",
            dependencies: ["Basics", "CBOR", "CTAP2", "CTAPHID", "CTAPHIDIO"],
            swiftSettings: strictSettings
        ),
        // The WebAuthn client's authenticators: a phone over hybrid and a security key over CTAPHID.
        .target(
            name: "WebAuthnClientDriver",
            dependencies: [
                "Basics", "CBOR", "CTAP2", "Hybrid", "HybridDriver", "HybridIO", "Proximity", "SecurityKeyDriver",
                "WebAuthnClient", "PasskeyFilesIO",
            ],
            swiftSettings: strictSettings
        ),
        // One driver per hybrid role, carrying out its session's actions over an injected environment.
        .target(
            name: "HybridDriver",
            dependencies: ["Hybrid", "HybridIO", "Proximity", "CTAP2", crypto, nioSSL, nioWebSocket],
            swiftSettings: strictSettings
        ),
        // What a browser and a relying party add around the client role, and the in-process nearby phone.
        .target(
            name: "NearbyShareDriver",
            dependencies: [
                "NearbyShare", "CredentialExchange", "Hybrid", "HybridDriver", "HybridIO", "Proximity", crypto,
            ],
            swiftSettings: strictSettings
        ),
        // MARK: Provider: the roles a person uses (phone, computer, security key, vault), with their policy, over
        // the drivers and adapters; the person comes in through `ProviderUserInterface`.
        .target(
            name: "PasskeyProvider",
            dependencies: [
                "Basics", "CTAP2", "CTAPHID", "Hybrid", "HybridDriver", "Proximity", "PasskeyStoreIO", "PasskeyFilesIO",
                "StoreAgent", "StoreAgentIO",
                "ChildProcessIO",
                "WebAuthnClientDriver", "SecurityKeyDriver", "WebAuthnClient", "WebAuthnClientIO", "AssociatedDomains",
                "AssociatedDomainsIO", "RelyingParty", "WebRelyingPartyIO", "WebRelyingParty",
                "WebAuthn", "CredentialExchange", "NearbyShare", "JSON", "HybridIO", "ProximityIO", "RelayIO",
                "PasskeySettings", logging, crypto,
            ],
            swiftSettings: strictSettings
        ),

        // Consent without a terminal: the desktop's notifications over D-Bus, and the queue of `passkey pending` in
        // the runtime directory, as the provider's user interface for services (Docs/Consent.md).
        .target(
            name: "ConsentIO",
            dependencies: ["CTAP2", "DBus", "Hybrid", "JSON", "PasskeyProvider", "PasskeyFilesIO", "QRImageIO"],
            swiftSettings: strictSettings),

        // The terminal as the provider's user interface: prompts on the controlling terminal, status lines, and each
        // role's questions and events as text (I/O: the terminal device and standard error).
        .target(
            name: "TerminalIO",
            dependencies: [
                "Basics", "CTAP2", "CTAPHID", "Hybrid", "HybridDriver", "Proximity", "PasskeyProvider",
                "SecurityKeyDriver", "WebAuthnClient", "WebAuthnClientIO", "PasskeyStoreIO", "WebAuthn", "CBOR", "JSON",
                "PublicSuffix", "AssociatedDomains", "NearbyShare", "NearbyShareDriver", "PasskeySettings",
                "PasskeyFilesIO", crypto,
            ],
            swiftSettings: strictSettings
        ),

        // MARK: Executables: wiring only.
        .executableTarget(
            name: "passkey",
            dependencies: [
                "Basics", "CBOR", "WebAuthn", "CTAP2", "CTAPHID", "RelyingParty", "PasskeyStoreIO", "CTAPHIDIO",
                "SecurityKeyDriver", "Hybrid", "QRImageIO", "Proximity", "ProximityIO", "HybridIO", "HybridDriver",
                "RelayIO", "UHID", "WebRelyingParty", "WebRelyingPartyIO", "PublicSuffix", "JSON",
                "WebAuthnClient", "WebAuthnClientIO", "WebAuthnClientDriver", "CredentialExchange", "NearbyShare",
                "NearbyShareDriver", "StoreAgent", "StoreAgentIO",
                "AssociatedDomains", "AssociatedDomainsIO", "SignedFilesIO", "PasswordRules", "PasskeyFilesIO",
                "PasskeyProvider", "PasskeySettings", "TerminalIO", "ConsentIO", "DBus", argumentParser, logging,
                crypto,
                nioCore,
                nioSSL,
                unixSignals,
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "passkey-relay",
            dependencies: [
                "Basics", "RelayIO", "RelayTLSIO", "Relay", "Hybrid", argumentParser, logging, serviceLifecycle,
                unixSignals,
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "PasskeyBench",
            dependencies: [
                "Basics", "CBOR", "WebAuthn", "CTAP2", "PasskeyStoreIO", "Hybrid", "HybridIO",
                "HybridDriver", "Proximity", "ProximityIO", "RelayIO", "Relay", "RelyingParty", "PublicSuffix",
                "WebAuthnClient", "WebAuthnClientIO", "WebAuthnClientDriver", "WebRelyingParty", "PasskeyProvider",
                "PasskeyFilesIO", "ChildProcessIO", crypto, argumentParser, nioCore, nioPosix,
                logging,
            ],
            swiftSettings: strictSettings
        ),

        // MARK: Fuzzing: one target per parser and state machine (Tools/fuzz builds it with libFuzzer).
        .target(
            name: "FuzzTargets",
            dependencies: [
                "Basics", "CBOR", "CTAP2", "CTAPHID", "UHID", "Hybrid", "QRImageIO", "RelayIO", "Relay",
                "PasskeyStoreIO",
                "PublicSuffix", "JSON", "WebAuthnClient", "CredentialExchange", "NearbyShare", "AssociatedDomains",
                "SignedFilesIO", "PasswordRules", "PasskeyFilesIO", "RelyingParty", "WebRelyingParty", "WebAuthn",
                "CSQLiteFaults", crypto,
                nioCore, nioEmbedded,
                logging,
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "passkey-fuzz", dependencies: ["FuzzTargets", "CFuzzerDriver", crypto], swiftSettings: strictSettings,
            linkerSettings: fuzzInstrumentation ? [.unsafeFlags(["-sanitize=address"])] : []),

        // MARK: Tests.
        // What several test targets share: seeded randomness, a manual clock, scratch directories, child processes,
        // a throwaway certificate authority, WebSocket frames and upgrade requests as bytes. Foundation only: no NIO,
        // no Crypto, none of our modules, so any test target can use it.
        .target(name: "TestSupport", path: "Tests/TestSupport", swiftSettings: strictSettings),
        .testTarget(name: "TestSupportTests", dependencies: ["TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "BasicsTests", dependencies: ["Basics", crypto, cryptoExtras], swiftSettings: strictSettings),
        .testTarget(name: "ChildProcessIOTests", dependencies: ["ChildProcessIO"], swiftSettings: strictSettings),
        // The `passkey` command tree itself, in process: every command's flags (Docs/CommandLine.md).
        .testTarget(
            name: "CommandLineTests", dependencies: ["passkey", "TerminalIO", argumentParser],
            swiftSettings: strictSettings),
        .testTarget(
            name: "PasskeyFilesIOTests", dependencies: ["PasskeyFilesIO", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "CBORTests", dependencies: ["Basics", "CBOR", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "JSONTests", dependencies: ["JSON"], swiftSettings: strictSettings),
        .testTarget(
            name: "WebAuthnTests", dependencies: ["Basics", "WebAuthn", "CBOR", crypto, cryptoExtras],
            swiftSettings: strictSettings),
        .testTarget(
            name: "CTAP2Tests",
            dependencies: ["Basics", "CTAP2", "WebAuthn", "CBOR", "TestSupport", crypto],
            resources: [.copy("Vectors")],
            swiftSettings: strictSettings
        ),
        .testTarget(name: "CTAPHIDTests", dependencies: ["CTAPHID", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "PublicSuffixTests", dependencies: ["PublicSuffix", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "WebAuthnClientTests",
            dependencies: [
                "WebAuthnClient", "JSON", "PublicSuffix", "WebRelyingParty", "RelyingParty", "CTAP2", "WebAuthn",
                "CBOR", "Basics", "TestSupport", "RelyingPartyTestSupport", crypto,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "WebAuthnClientIOTests",
            dependencies: [
                "WebAuthnClientIO", "WebAuthnClient", "PublicSuffix", "TestSupport", "AssociatedDomains",
                "AssociatedDomainsIO", "SignedFilesIO", "PasskeyStoreIO", "PasskeyFilesIO", nioCore, nioPosix,
                nioHTTP1, nioSSL,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CredentialExchangeTests", dependencies: ["Basics", "CredentialExchange", "CTAP2", "JSON", crypto],
            swiftSettings: strictSettings),
        .testTarget(
            name: "AssociatedDomainsTests", dependencies: ["AssociatedDomains"], swiftSettings: strictSettings),
        .testTarget(
            name: "SignedFilesIOTests", dependencies: ["SignedFilesIO", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "PasswordRulesTests", dependencies: ["PasswordRules", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "PasskeySettingsTests",
            dependencies: ["PasskeySettings", "PasskeyProvider", "PasskeyFilesIO", "Hybrid", "Proximity"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ConsentIOTests",
            dependencies: [
                "ConsentIO", "DBus", "JSON", "PasskeyProvider", "PasskeySettings", "CTAP2", "Hybrid", "QRImageIO",
                "TestSupport",
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "DBusTests", dependencies: ["DBus", "CSystemd", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "FuzzTargetsTests",
            dependencies: ["FuzzTargets", "CSQLiteFaults", "PasskeyStoreIO", "CTAP2", "TestSupport", crypto],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HybridIOTests",
            dependencies: [
                "HybridIO", "HybridDriver", "RelayIO", "RelayTLSIO", "Relay", "Hybrid", "Proximity", "ProximityIO",
                "CTAP2", "RelyingParty", "WebSocketMessages", "WebAuthnClient", "WebAuthnClientDriver",
                "WebRelyingParty", "PublicSuffix", "TestSupport", crypto, nioCore, nioPosix, nioHTTP1,
                nioSSL, nioEmbedded, nioWebSocket, logging,
            ],
            swiftSettings: strictSettings
        ),
        // In-memory tunnels, relay and air for the hybrid drivers' tests and the provider's.
        .target(
            name: "HybridTestSupport", dependencies: ["Hybrid", "HybridDriver", "HybridIO", "Proximity"],
            path: "Tests/HybridTestSupport", swiftSettings: strictSettings),
        .testTarget(
            name: "HybridDriverTests",
            dependencies: [
                "HybridDriver", "HybridIO", "Hybrid", "Proximity", "CTAP2", "NearbyShare", "NearbyShareDriver",
                "CredentialExchange", "HybridTestSupport", "TestSupport", "WebAuthn", "WebAuthnClient",
                "WebAuthnClientDriver", crypto,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TerminalIOTests",
            dependencies: [
                "TerminalIO", "PasskeyProvider", "PasskeySettings", "Hybrid", "HybridDriver", "Proximity", "Basics",
                "CTAP2", "CTAPHID",
                "SecurityKeyDriver", "WebAuthn", "JSON", "PublicSuffix", "WebAuthnClient", "AssociatedDomains",
                "PasskeyStoreIO", "NearbyShare", "NearbyShareDriver", "TestSupport", crypto,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PasskeyProviderTests",
            dependencies: [
                "Basics", "PasskeyProvider", "PasskeyStoreIO", "PasskeyFilesIO", "HybridDriver", "HybridIO", "Hybrid",
                "Proximity", "CTAP2", "CTAPHID", "CBOR", "HybridTestSupport", "TestSupport", "WebAuthnClientDriver",
                "SecurityKeyDriver",
                "WebAuthnClient", "AssociatedDomains", "AssociatedDomainsIO", "RelyingParty",
                "WebRelyingParty", "CredentialExchange", "NearbyShare", "RelyingPartyTestSupport", "WebAuthn", crypto,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "RelayTests", dependencies: ["Relay", "Hybrid", "Basics"], swiftSettings: strictSettings),
        .testTarget(
            name: "WebSocketMessagesTests", dependencies: ["WebSocketMessages", nioCore, nioEmbedded, nioWebSocket],
            swiftSettings: strictSettings),
        .testTarget(
            name: "RelayIOTests",
            dependencies: [
                "RelayIO", "RelayTLSIO", "Relay", "Hybrid", "TestSupport", nioCore, nioPosix, nioWebSocket, nioSSL,
                nioEmbedded,
                logging, serviceLifecycle,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "HybridTests",
            dependencies: ["Basics", "Hybrid", "CBOR", "CTAP2", "WebAuthn", "TestSupport", crypto],
            resources: [.copy("Vectors")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "RelyingPartyTests",
            dependencies: ["Basics", "RelyingParty", "WebAuthn", "CBOR", "TestSupport", crypto],
            resources: [.copy("Vectors")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PasskeyStoreIOTests",
            dependencies: [
                "Basics", "PasskeyStoreIO", "PasskeyFilesIO", "CTAP2", "CSQLite", "TestSupport", "WebAuthn", crypto,
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CTAPHIDIOTests",
            dependencies: [
                "CTAPHIDIO", "CTAPHID", "CTAP2", "UHID", "TestSupport", nioCore, nioPosix, nioEmbedded, logging,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SecurityKeyDriverTests",
            dependencies: [
                "Basics", "SecurityKeyDriver", "WebAuthnClient", "WebAuthnClientDriver", "CTAPHIDIO", "CTAPHID",
                "CTAP2", "CBOR", "WebAuthn", crypto, nioCore, nioPosix,
                logging,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StoreAgentTests",
            dependencies: ["StoreAgent", "StoreAgentIO", "PasskeyStoreIO", "CTAP2", "TestSupport", crypto],
            swiftSettings: strictSettings),
        .testTarget(name: "UHIDTests", dependencies: ["UHID", "CUHIDHeader"], swiftSettings: strictSettings),
        .testTarget(
            name: "ProximityTests",
            dependencies: [
                "Proximity", "ProximityIO", "CBlueZ", "DBus", "Hybrid", "TestSupport", nioCore, nioEmbedded,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "QRImageIOTests",
            dependencies: ["QRImageIO", "Hybrid", "TestSupport", crypto],
            swiftSettings: strictSettings
        ),
        // A software authenticator that answers in the WebAuthn Level 3 JSON forms, for the two test targets below.
        .target(
            name: "RelyingPartyTestSupport",
            dependencies: ["Basics", "RelyingParty", "WebAuthn", "WebAuthnClient", "CBOR", crypto],
            path: "Tests/RelyingPartyTestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "WebRelyingPartyTests",
            dependencies: [
                "Basics", "JSON", "WebRelyingParty", "RelyingParty", "WebAuthn", "RelyingPartyTestSupport", crypto,
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "WebRelyingPartyIOTests",
            dependencies: [
                "WebRelyingPartyIO", "WebRelyingParty", "RelyingParty", "RelyingPartyTestSupport", "TestSupport",
                crypto, nioCore, nioPosix, nioHTTP1, nioEmbedded,
            ],
            swiftSettings: strictSettings
        ),
    ]
)

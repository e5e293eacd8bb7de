import NIOCore
import NIOHTTP1
import WebRelyingParty

/// Collects one HTTP request, hands it to ``RelyingPartyService`` and writes the answer: translation only.
///
/// It enforces the body limit (413 as soon as `Content-Length` or the bytes received exceed it, then the
/// connection closes), answers unreadable requests with a JSON 400 (431 for oversized headers) and closes, and
/// closes a connection when no request part has arrived for `idleTimeout` (a request head must arrive whole
/// within it). A request, once its head is read, must arrive whole within `requestTimeout`, or it is answered 408 and
/// the connection closes: a client dripping its body stays busy, which the connection table never takes a place
/// from. The timers run on the channel's event loop, so `EmbeddedEventLoop` tests advance them. Keep-alive follows
/// the request.
final class RelyingPartyHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        case receiving(HTTPRequestHead, body: [UInt8])
        /// A refusal was sent mid-request; the rest is ignored until the connection closes.
        case closing
    }

    private let service: RelyingPartyService
    private let maximumBodyBytes: Int
    private let idleTimeout: TimeAmount
    private let requestTimeout: TimeAmount
    /// Told when a request starts (true) and when its answer is written (false): the server's connection table.
    private let requestStateChanged: ((Bool) -> Void)?
    private var state = State.idle
    private var idleTimer: Scheduled<Void>?
    private var requestTimer: Scheduled<Void>?

    init(
        service: RelyingPartyService, maximumBodyBytes: Int, idleTimeout: TimeAmount,
        requestTimeout: TimeAmount = .seconds(10), requestStateChanged: ((Bool) -> Void)? = nil
    ) {
        self.service = service
        self.maximumBodyBytes = maximumBodyBytes
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.requestStateChanged = requestStateChanged
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { armIdleTimer(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        requestTimer?.cancel()
    }

    func channelActive(context: ChannelHandlerContext) {
        armIdleTimer(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        requestTimer?.cancel()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        armIdleTimer(context: context)
        switch (Self.unwrapInboundIn(data), state) {
        case (.head(let head), .idle):
            if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > maximumBodyBytes {
                refuseAndClose(.payloadTooLarge, "the body is larger than \(maximumBodyBytes) bytes", context: context)
                return
            }
            state = .receiving(head, body: [])
            requestStateChanged?(true)
            requestTimer = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) { [self] in
                guard case .receiving = state else { return }
                refuseAndClose(
                    .requestTimeout,
                    "the request did not arrive whole within \(requestTimeout.nanoseconds / 1_000_000_000) s",
                    context: context)
            }
        case (.body(let buffer), .receiving(let head, var body)):
            state = .idle  // so that `body` is the only reference and appends in place
            guard body.count + buffer.readableBytes <= maximumBodyBytes else {
                refuseAndClose(.payloadTooLarge, "the body is larger than \(maximumBodyBytes) bytes", context: context)
                return
            }
            body.append(contentsOf: buffer.readableBytesView)
            state = .receiving(head, body: body)
        case (.end, .receiving(let head, let body)):
            state = .idle
            requestTimer?.cancel()
            let response = service.handle(
                RelyingPartySite.Request(
                    method: head.method.rawValue, target: head.uri, host: head.headers.first(name: "Host"),
                    contentType: head.headers.first(name: "Content-Type"), cookie: head.headers.first(name: "Cookie"),
                    body: body))
            write(response, keepAlive: head.isKeepAlive, context: context)
            requestStateChanged?(false)
        case (_, .closing):
            break
        case (.head, .receiving), (.body, .idle), (.end, .idle):
            break  // HTTPDecoder never sends parts out of order
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard context.channel.isActive else { return }  // a partial request cut off by the close: nobody to answer
        switch (error as? HTTPParserError, state) {
        case (.headerOverflow?, .idle), (.headerOverflow?, .receiving):
            refuseAndClose(.headersTooLarge, "the request headers are too large or too many", context: context)
        case (.some(let parserError), .idle), (.some(let parserError), .receiving):
            refuseAndClose(.badRequest, "the HTTP request could not be read (\(parserError))", context: context)
        default:
            context.close(promise: nil)
        }
    }

    private func armIdleTimer(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) {
            context.close(promise: nil)
        }
    }

    private func refuseAndClose(
        _ code: WebRelyingPartyError.Code, _ message: String, context: ChannelHandlerContext
    ) {
        state = .closing
        requestTimer?.cancel()
        write(service.refusal(WebRelyingPartyError(code, message)), keepAlive: false, context: context)
    }

    private func write(_ response: RelyingPartySite.Response, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(response.headers.map { ($0.name, $0.value) })
        headers.add(name: "Content-Length", value: String(response.body.count))
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(Self.wrapOutboundOut(.head(head)), promise: nil)
        if !response.body.isEmpty {
            context.write(
                Self.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))),
                promise: nil)
        }
        if keepAlive {
            context.writeAndFlush(Self.wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            let channel = context.channel
            context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

@available(*, unavailable)
extension RelyingPartyHTTPHandler: Sendable {}

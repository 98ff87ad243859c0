package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the provider's state, all in memory: its users, one client,
// authorization requests, access tokens and device authorizations. It
// implements op.Storage and op.DeviceAuthorizationStorage, and nothing
// more than the flows jetjob uses need (no refresh tokens).
type storage struct {
	key    *rsa.PrivateKey
	keyID  string
	client *client

	mu       sync.Mutex
	users    map[string]*User // by username
	requests map[string]*authRequest
	codes    map[string]string // code → request id
	tokens   map[string]string // access token id → subject
	devices  map[string]*device
	// tamper is how the provider misbehaves (Provider.Tamper).
	tamper Tamper
	// foreign signs ID tokens when tamper.ForeignKey.
	foreign *rsa.PrivateKey
	// userCodes receives the user code of each device authorization.
	userCodes chan string
}

type device struct {
	clientID string
	userCode string
	scopes   []string
	expires  time.Time
	subject  string
	done     bool
	denied   bool
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var errNotFound = errors.New("not found")

func (s *storage) userBySubject(sub string) *User {
	for _, u := range s.users {
		if u.Subject == sub {
			return u
		}
	}
	return nil
}

// authRequest is an authorization request and, once the user signed in,
// who they are.
type authRequest struct {
	oidc.AuthRequest
	id       string
	subject  string
	authTime time.Time
	done     bool
}

func (a *authRequest) GetID() string                      { return a.id }
func (a *authRequest) GetACR() string                     { return "" }
func (a *authRequest) GetAMR() []string                   { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string              { return []string{a.ClientID} }
func (a *authRequest) GetAuthTime() time.Time             { return a.authTime }
func (a *authRequest) GetClientID() string                { return a.ClientID }
func (a *authRequest) GetNonce() string                   { return a.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.Scopes }
func (a *authRequest) GetState() string                   { return a.State }
func (a *authRequest) GetSubject() string                 { return a.subject }
func (a *authRequest) Done() bool                         { return a.done }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.CodeChallenge, Method: a.CodeChallengeMethod}
}

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &authRequest{AuthRequest: *req, id: newID()}
	if s.tamper.Nonce {
		a.Nonce = "not-the-nonce-" + newID()
	}
	s.requests[a.id] = a
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.requests[id]; ok {
		return a, nil
	}
	return nil, errNotFound
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errNotFound
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for c, rid := range s.codes {
		if rid == id {
			delete(s.codes, c)
		}
	}
	return nil
}

// signIn checks a user's password and completes authorization request id.
func (s *storage) signIn(id, username, password string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[username]
	if !ok || u.Password != password {
		return errors.New("wrong user name or password")
	}
	a, ok := s.requests[id]
	if !ok {
		return errors.New("unknown authorization request")
	}
	a.subject, a.authTime, a.done = u.Subject, time.Now(), true
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := newID()
	s.tokens[id] = req.GetSubject()
	return id, time.Now().Add(5 * time.Minute), nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errors.New("refresh tokens are not supported")
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error { return nil }

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

// signingKey is the provider's one RSA key.
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tamper.ForeignKey {
		return signingKey{id: s.keyID, key: s.foreign}, nil
	}
	return signingKey{id: s.keyID, key: s.key}, nil
}

// current is the signing key and its id.
func (s *storage) current() signingKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return signingKey{id: s.keyID, key: s.key}
}

// idTokenLifetime is the client's ID token lifetime: negative when the
// provider is told to issue expired tokens.
func (s *storage) idTokenLifetime() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tamper.Expired {
		return -10 * time.Minute
	}
	return 5 * time.Minute
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{s.current()}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if id != s.client.id {
		return nil, errNotFound
	}
	return s.client, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if id != s.client.id || secret != s.client.secret {
		return errors.New("wrong client id or secret")
	}
	return nil
}

// setUserinfo fills the claims of the user with subject sub: the
// username, name, email and the groups claim.
func (s *storage) setUserinfo(info *oidc.UserInfo, sub string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.userBySubject(sub)
	if u == nil {
		return errNotFound
	}
	info.Subject = u.Subject
	info.PreferredUsername = u.Username
	info.Name = u.Name
	info.Email = u.Username + "@example.test"
	info.AppendClaims(GroupsClaim, slices.Clone(u.Groups))
	return nil
}

func (s *storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, userID, _ string, _ []string) error {
	return s.setUserinfo(info, userID)
}

// tokenSubject is the user an access token was issued to.
func (s *storage) tokenSubject(tokenID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.tokens[tokenID]
	if !ok {
		return "", errNotFound
	}
	return sub, nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, _, _ string) error {
	sub, err := s.tokenSubject(tokenID)
	if err != nil {
		return err
	}
	return s.setUserinfo(info, sub)
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, in *oidc.IntrospectionResponse, tokenID, _, _ string) error {
	sub, err := s.tokenSubject(tokenID)
	if err != nil {
		return err
	}
	in.Active, in.Subject = true, sub
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotFound
}

func (s *storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}

func (s *storage) Health(context.Context) error { return nil }

func (s *storage) StoreDeviceAuthorization(_ context.Context, clientID, deviceCode, userCode string, expires time.Time, scopes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devices {
		if d.userCode == userCode {
			return op.ErrDuplicateUserCode
		}
	}
	s.devices[deviceCode] = &device{clientID: clientID, userCode: userCode, scopes: scopes, expires: expires}
	select {
	case s.userCodes <- userCode:
	default:
	}
	return nil
}

func (s *storage) GetDeviceAuthorizatonState(_ context.Context, clientID, deviceCode string) (*op.DeviceAuthorizationState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[deviceCode]
	if !ok || d.clientID != clientID {
		return nil, errNotFound
	}
	return &op.DeviceAuthorizationState{ClientID: d.clientID, Audience: []string{d.clientID}, Scopes: d.scopes,
		Expires: d.expires, Done: d.done, Denied: d.denied, Subject: d.subject, AMR: []string{"pwd"}, AuthTime: time.Now()}, nil
}

// completeDevice signs a user in for the device authorization of userCode.
func (s *storage) completeDevice(userCode, username, password string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[username]
	if !ok || u.Password != password {
		return errors.New("wrong user name or password")
	}
	for _, d := range s.devices {
		if d.userCode == userCode && time.Now().Before(d.expires) {
			d.subject, d.done = u.Subject, true
			return nil
		}
	}
	return errors.New("unknown or expired user code")
}

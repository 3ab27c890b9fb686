"""How far an honest replay in another numerical environment moves each tensor of the CNN
demo's training (docs/replay.md, "Regimes", "Calibration"): the demo's model and optimizer
(Adam, lr 3e-3) in torch, recorded under the current environment, then replayed segment by
segment from the recorded snapshots on the recorded batches under another (set
ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, MKL_CBWR, … on one side). Prints, per tensor, the
largest difference in units of u × the model's scale (the "ratio" the envelope bounds) and
the relative L2 error. Not a test:

    ATEN_CPU_CAPABILITY=default $VENV/bin/python tests/python/measure_cross_environment.py record cnn.pt 40 8
    $VENV/bin/python tests/python/measure_cross_environment.py replay cnn.pt
"""
import sys, math, torch, torch.nn.functional as F
torch.set_num_threads(1)
def model(g):
    p = {'conv1.weight': torch.randn(8,1,3,3,generator=g)*0.3, 'conv1.bias': torch.zeros(8),
         'bn1.weight': torch.ones(8), 'bn1.bias': torch.zeros(8),
         'conv2.weight': torch.randn(16,8,3,3,generator=g)*0.1, 'conv2.bias': torch.zeros(16),
         'fc.weight': torch.randn(4,16,generator=g)*0.25, 'fc.bias': torch.zeros(4)}
    b = {'rm': torch.zeros(8), 'rv': torch.ones(8)}
    return p, b
def batch(g, n):
    labels = torch.randint(4, (n,), generator=g); images = torch.randn(n,1,12,12,generator=g)*0.5
    for i in range(n):
        c=int(labels[i]); off = 3 if c%2==0 else 8
        if c<2: images[i,0,off:off+2,:]+=1.5
        else: images[i,0,:,off:off+2]+=1.5
    return images, labels
def step(p, b, images, labels):
    h = F.conv2d(images, p['conv1.weight'], p['conv1.bias'], 1, 1)
    h = F.batch_norm(h, b['rm'], b['rv'], p['bn1.weight'], p['bn1.bias'], True, 0.1, 1e-5)
    h = F.max_pool2d(torch.relu(h), 2)
    h = torch.relu(F.conv2d(h, p['conv2.weight'], p['conv2.bias'], 1, 1))
    return F.nll_loss(F.log_softmax(F.linear(h.mean([2,3]), p['fc.weight'], p['fc.bias']), 1), labels)
def train(p, b, opt_state, batches, start, stop, record):
    params = [p[k].requires_grad_(True) for k in p]
    opt = torch.optim.Adam(params, lr=3e-3)
    if opt_state is not None: opt.load_state_dict(opt_state)
    out = []
    for t in range(start, stop):
        images, labels = batches[t]
        opt.zero_grad(); loss = step(p, b, images, labels); loss.backward()
        before = [x.detach().clone() for x in params]; opt.step()
        out.append({'loss': loss.detach().clone(), 'delta': {k: p[k].detach()-x for k,x in zip(p, before)},
                    'grad': {k: p[k].grad.detach().clone() for k in p}})
    return out, opt
if sys.argv[1]=='record':
    steps, n = int(sys.argv[3]), int(sys.argv[4]); g=torch.Generator().manual_seed(11)
    p,b = model(g); batches=[batch(g,n) for _ in range(steps)]
    snaps = {}; opt_state=None; recs=[]
    for s in range(0, steps, 12):
        snaps[s] = ({k:v.detach().clone() for k,v in p.items()}, {k:v.clone() for k,v in b.items()}, __import__('copy').deepcopy(opt_state))
        out, opt = train(p, b, opt_state, batches, s, min(s+12, steps), True); recs+=out
        opt_state = __import__('copy').deepcopy(opt.state_dict())
    snaps[steps] = ({k:v.detach().clone() for k,v in p.items()}, {k:v.clone() for k,v in b.items()}, opt_state)
    torch.save({'batches':batches,'snaps':snaps,'recs':recs,'steps':steps}, sys.argv[2])
else:
    d = torch.load(sys.argv[2], weights_only=False); steps=d['steps']; u=2.0**-24; worst={}
    def note(k,r,rel): w=worst.get(k,(0,0)); worst[k]=(max(w[0],r),max(w[1],rel))
    for s in range(0, steps, 12):
        sp, sb, so = d['snaps'][s]; p={k:v.clone() for k,v in sp.items()}; b={k:v.clone() for k,v in sb.items()}
        e=min(s+12,steps); out, opt = train(p, b, __import__('copy').deepcopy(so), d['batches'], s, e, False)
        seg=0.0; bufchange=0.0
        for i,o in enumerate(out):
            r = d['recs'][s+i]; model_update = math.sqrt(sum(float(x.double().pow(2).sum()) for x in o['delta'].values())); seg+=model_update
            gm = math.sqrt(sum(float(x.double().pow(2).sum()) for x in o['grad'].values()))
            dl=abs(float(o['loss'])-float(r['loss'])); note('loss', dl/(u*abs(float(o['loss']))), dl/abs(float(r['loss'])))
            for k in o['delta']:
                dd=float((o['delta'][k].double()-r['delta'][k].double()).norm()); nn=float(r['delta'][k].double().norm())
                note(k+' delta', dd/(u*model_update), dd/max(nn,1e-300))
                gd=float((o['grad'][k].double()-r['grad'][k].double()).norm()); note(k+' grad(vs model grad)', gd/(u*gm), gd/max(float(r['grad'][k].double().norm()),1e-300))
        ep, eb, eo = d['snaps'][e]
        for k in p:
            dd=float((p[k].detach().double()-ep[k].double()).norm()); note('param '+k, dd/(u*seg), dd/max(float(ep[k].double().norm()),1e-300))
        st = opt.state_dict()['state']; rst = eo['state']
        for slot in ('exp_avg','exp_avg_sq'):
            scale = math.sqrt(sum(float(st[i][slot].double().pow(2).sum()) for i in st))
            for i,k in enumerate(p):
                dd=float((st[i][slot].double()-rst[i][slot].double()).norm()); note(f'state {k} {slot}', dd/(u*scale), dd/max(float(rst[i][slot].double().norm()),1e-300))
        for k in b:
            dd=float((b[k].double()-eb[k].double()).norm()); note('buffer '+k, float('nan'), dd/max(float(eb[k].double().norm()),1e-300))
    for k,(r,rel) in sorted(worst.items(), key=lambda kv: -(kv[1][0] if kv[1][0]==kv[1][0] else 0)):
        print(f"{k:36s} ratio {r:10.3g}  relL2 {rel:10.3g}")
